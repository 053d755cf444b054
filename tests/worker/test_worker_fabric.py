"""The worker against a real FabricTarget over an SQLite store, with the real refresh."""

from __future__ import annotations

from pathlib import Path

from lib.fabric.target import FabricTarget
from lib.ledger import CommandLedgers
from lib.session_key import session_key
from lib.worker import CommandWorker
from tests.fabric.target_helpers import make_env
from tests.support.scripted_driver import ScriptedDriver
from tests.support.sessions import make_snapshot
from tests.worker.helpers import OWNER, PRODUCER, command


def worker_over(target: FabricTarget, driver: ScriptedDriver, ledger_dir: Path, **options) -> CommandWorker:
    return CommandWorker({"scripted": driver}, [target], CommandLedgers(ledger_dir), owner_did=OWNER, **options)


def test_a_prompt_claims_runs_publishes_its_receipt_and_refreshes_the_session(tmp_path: Path):
    env = make_env(tmp_path)
    target = env.target()
    driver = ScriptedDriver(snapshots=[make_snapshot("s1")])
    receipts = []
    worker = worker_over(target, driver, tmp_path / "ledgers", on_receipt=receipts.append)
    try:
        worker.handle([command("p1", text="hello")])
        worker.handle([command("p1", text="hello again")], producer=PRODUCER)
        worker.drain()
    finally:
        worker.close()
        worker.ledgers.close()
    mine, theirs = target.read_receipt("p1"), target.read_receipt("p1", PRODUCER)
    assert mine.status == theirs.status == "succeeded"
    assert mine.producer is None and theirs.producer == PRODUCER
    assert sorted(receipts, key=lambda r: r.producer or "") == sorted([mine, theirs], key=lambda r: r.producer or "")
    rows = target.receipt_rows()
    assert sorted((row["commandId"], row.get("producer") or "", row["status"]) for row in rows) == [
        ("p1", "", "succeeded"), ("p1", PRODUCER, "succeeded")
    ]
    published = target.published_sessions()[session_key("scripted", "s1")]
    assert published.native_session_id == "s1"
    assert len(driver.calls_of("prompt")) == 2


def test_a_receipt_published_by_an_earlier_host_prevents_a_second_run(tmp_path: Path):
    env = make_env(tmp_path)
    driver = ScriptedDriver(snapshots=[make_snapshot("s1")])
    first = worker_over(env.target(), driver, tmp_path / "host-a")
    first.handle([command("p1")])
    first.close()
    first.ledgers.close()
    # Another host: a new local ledger, the same store.
    target = env.target()
    second = worker_over(target, driver, tmp_path / "host-b")
    second.handle([command("p1")])
    second.close()
    assert len(driver.calls_of("prompt")) == 1
    assert second.ledgers.get("p1")["status"] == "succeeded"
    assert second.ledgers.pending_publication_count() == 0
    second.ledgers.close()
    assert target.read_receipt("p1").status == "succeeded"


def test_recovery_publishes_an_interrupted_claim_as_unknown(tmp_path: Path):
    from lib.commands import parse_command
    from lib.receipts import in_flight_receipt

    env = make_env(tmp_path)
    target = env.target()
    driver = ScriptedDriver(snapshots=[make_snapshot("s1")])
    ledgers = CommandLedgers(tmp_path / "ledgers")
    claim = in_flight_receipt(parse_command(command("p1")))
    ledgers.put(claim)
    assert target.claim_receipt(claim)
    worker = CommandWorker({"scripted": driver}, [target], ledgers, owner_did=OWNER)
    try:
        [receipt] = worker.recover_unpublished_receipts()
        assert receipt.status == "unknown"
        assert target.read_receipt("p1") == receipt
        assert [row["status"] for row in target.receipt_rows()] == ["unknown"]
    finally:
        worker.close()
        ledgers.close()
    assert driver.calls_of("prompt") == []


def test_a_command_whose_receipt_left_the_ledger_is_still_never_run_again(tmp_path: Path):
    from lib.ledger.ledger import MAX_SETTLED

    env = make_env(tmp_path)
    driver = ScriptedDriver(snapshots=[make_snapshot("s1")])
    worker = worker_over(env.target(), driver, tmp_path / "ledgers")
    worker.handle([command(f"r{n}", "rename", title=f"t{n}") for n in range(MAX_SETTLED + 5)])
    worker.drain()
    assert worker.ledgers.get("r0") is None  # dropped from the ledger as one of the oldest
    worker.close()
    worker.ledgers.close()
    again = worker_over(env.target(), driver, tmp_path / "ledgers")  # a restart: no in-process memory
    again.handle([command("r0", "rename", title="t0")])  # redelivered
    again.close()
    again.ledgers.close()
    assert [call[1:] for call in driver.calls_of("rename")].count(("s1", "t0")) == 1

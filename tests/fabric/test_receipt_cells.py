"""Receipt cells and the receipt index, against a real SQLite store (docs/command-path.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lib.fabric.receipt_cells import MAX_ROWS, receipt_cell_id
from lib.fabric.schemas import COMMAND_RECEIPTS_SCHEMA
from lib.fabric.target import FabricTarget, TargetError
from lib.fabric.values import Link
from lib.receipts import RECEIPT_SCHEMA, CommandReceipt
from tests.fabric.holders import GUARD, REPO
from tests.fabric.target_helpers import SPACE, Env, make_env

CLAIMED = "2026-07-01T12:00:00.000Z"
DONE = "2026-07-01T12:05:00.000Z"


def receipt(
    command_id: str, status: str = "in-flight", *, producer: str | None = None, **fields: Any
) -> CommandReceipt:
    return CommandReceipt(
        command_id=command_id,
        producer=producer,
        source_id="codex",
        native_session_id="s1",
        status=status,
        claimed_at=fields.pop("claimed_at", CLAIMED),
        **fields,
    )


def ids(target: FabricTarget) -> list[tuple[str | None, str]]:
    return [(row.get("producer"), row["commandId"]) for row in target.receipt_rows()]


def two_stores_of_one_owner(tmp_path: Path) -> tuple[Env, Env]:
    """Two environments in `a` and `b` sharing one identity (so one owner and space)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = make_env(tmp_path / "a")
    shutil.copy(tmp_path / "a" / "identity", tmp_path / "b" / "identity")
    return first, make_env(tmp_path / "b")


def write_index(env: Env, target: FabricTarget, value: Any) -> None:
    with env.store.transaction(SPACE, target.writer) as tx:
        tx.write(target.receipt_cell_id(), value)
        tx.commit()


def test_a_published_receipt_reads_back_and_a_producers_receipt_is_another_cell(
    tmp_path: Path,
) -> None:
    target = make_env(tmp_path).target()
    done = receipt("c1", "succeeded", completed_at=DONE, result={"items": [1, {"id": "x"}]})
    target.publish_receipt(done)
    target.publish_receipt(receipt("c1", producer="debug-pattern"))
    assert target.read_receipt("c1") == done
    assert target.read_receipt("c1", "debug-pattern") == receipt("c1", producer="debug-pattern")
    assert target.read_receipt("c2") is None
    owner_cell = receipt_cell_id(SPACE, target.owner, "c1")
    assert owner_cell != receipt_cell_id(SPACE, target.owner, "c1", "debug-pattern")
    rows = target.receipt_rows()
    assert ids(target) == [(None, "c1"), ("debug-pattern", "c1")]
    assert rows[0]["receipt"] == Link(owner_cell, SPACE, ())
    assert rows[0]["status"] == "succeeded" and rows[1]["status"] == "in-flight"


def test_the_index_keeps_the_most_recent_200_rows(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    for n in range(MAX_ROWS + 5):
        target.publish_receipt(receipt(f"c{n}"))
    assert ids(target) == [(None, f"c{n}") for n in range(5, MAX_ROWS + 5)]
    assert target.read_receipt("c0") is not None  # the cell outlives its row


def test_republishing_moves_the_row_to_the_end_without_duplicating(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    for name in ("c1", "c2", "c3"):
        target.publish_receipt(receipt(name))
    target.publish_receipt(receipt("c1", "succeeded", completed_at=DONE))
    assert ids(target) == [(None, "c2"), (None, "c3"), (None, "c1")]
    assert target.receipt_rows()[-1]["status"] == "succeeded"
    assert target.read_receipt("c1").status == "succeeded"


def _row(target: FabricTarget, command_id: str, **changes: Any) -> dict[str, Any]:
    row = {
        "commandId": command_id,
        "sourceId": "codex",
        "nativeSessionId": "s1",
        "status": "in-flight",
        "updatedAt": CLAIMED,
        "receipt": Link(receipt_cell_id(SPACE, target.owner, command_id), SPACE, ()),
    }
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


@pytest.mark.parametrize(
    "shape", ["not an object", "another schema", "receipts not a list", "one command twice"]
)
def test_a_malformed_index_raises_and_is_left_unchanged(tmp_path: Path, shape: str) -> None:
    env = make_env(tmp_path)
    target = env.target()
    value = {
        "not an object": ["nope"],
        "another schema": {"schema": "older", "receipts": []},
        "receipts not a list": {"schema": COMMAND_RECEIPTS_SCHEMA, "receipts": {}},
        "one command twice": {
            "schema": COMMAND_RECEIPTS_SCHEMA,
            "receipts": [_row(target, "c1"), _row(target, "c1", status="failed")],
        },
    }[shape]
    write_index(env, target, value)
    before = env.store.read(SPACE, target.receipt_cell_id())
    for attempt in (
        lambda: target.publish_receipt(receipt("c2")),
        lambda: target.claim_receipt(receipt("c2")),
        target.receipt_rows,
    ):
        with pytest.raises(TargetError) as caught:
            attempt()
        assert caught.value.code == "malformed-receipt-index"
    assert env.store.read(SPACE, target.receipt_cell_id()) == before
    assert target.read_receipt("c2") is None  # the receipt commits with the index or not at all


def test_invalid_rows_are_dropped_from_the_rewrite(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    stranger = Link(receipt_cell_id(SPACE, "did:key:z6MkOther", "c4"), SPACE, ())
    rows = [
        _row(target, "c1"),
        "not a row",
        _row(target, "c2", status="done?"),
        _row(target, "c3", updatedAt="yesterday"),
        _row(target, "c4", receipt=stranger),
        _row(target, " c5 "),  # not canonical
    ]
    write_index(env, target, {"schema": COMMAND_RECEIPTS_SCHEMA, "updatedAt": CLAIMED, "receipts": rows})
    assert ids(target) == [(None, "c1")]
    target.publish_receipt(receipt("c6"))
    stored = env.store.read(SPACE, target.receipt_cell_id()).value["receipts"]
    assert len(stored) == 2
    assert ids(target) == [(None, "c1"), (None, "c6")]


def test_read_receipt_rejects_an_invalid_stored_receipt(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    stored = {
        "c1": {**receipt("c1").to_wire(), "status": "finished"},
        "c2": receipt("other").to_wire(),  # another command's receipt in c2's cell
        "c3": receipt("c3", producer="someone").to_wire(),  # the owner queue's cell
    }
    with env.store.transaction(SPACE, target.writer) as tx:
        for command_id, value in stored.items():
            tx.write(receipt_cell_id(SPACE, target.owner, command_id), value)
        tx.commit()
    for command_id in stored:
        with pytest.raises(TargetError) as caught:
            target.read_receipt(command_id)
        assert caught.value.code == "invalid-receipt"


def test_a_second_claim_returns_false_and_leaves_the_first_receipt(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    assert target.claim_receipt(receipt("c1")) is True
    head = env.store.head(SPACE)
    assert target.claim_receipt(receipt("c1", claimed_at="2026-07-01T13:00:00.000Z")) is False
    assert env.store.head(SPACE) == head
    assert target.read_receipt("c1").claimed_at == CLAIMED
    assert ids(target) == [(None, "c1")]
    # the same id on a producer's queue is another command with its own claim
    assert target.claim_receipt(receipt("c1", producer="p")) is True


def test_a_claim_is_an_in_flight_receipt(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    with pytest.raises(TargetError) as caught:
        target.claim_receipt(receipt("c1", "succeeded"))
    assert caught.value.code == "invalid-claim"
    assert target.read_receipt("c1") is None


def test_a_read_only_target_refuses_to_claim_or_publish(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.target()
    reader = env.target(read_only=True)
    for attempt in (reader.claim_receipt, reader.publish_receipt):
        with pytest.raises(TargetError) as caught:
            attempt(receipt("c1"))
        assert caught.value.code == "read-only-target"
    assert reader.receipt_rows() == []


_CLAIMER = r"""
import json, random, sys
from lib.fabric.store import open_store
from lib.fabric.target import FabricTarget
from lib.receipts import CommandReceipt
url, space, owner, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = open_store(url)
target = FabricTarget.open(store, space=space, owner=owner)
names = [f"c{n}" for n in range(count)]
random.shuffle(names)
print("ready", flush=True)
sys.stdin.readline()
won = [name for name in names if target.claim_receipt(CommandReceipt(
    command_id=name, source_id="codex", native_session_id="s1", status="in-flight",
    claimed_at="2026-07-01T12:00:00.000Z", provider_operation_id=sys.argv[5]))]
store.close()
print(json.dumps(won), flush=True)
"""


def test_processes_racing_to_claim_the_same_commands_each_win_exactly_once(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    target = env.target()
    workers, count = 4, 12
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CLAIMER, env.store_url, SPACE, env.owner, str(count), f"w{n}"],
            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        for n in range(workers)
    ]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        for child in children:  # released together, so their claims interleave
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        won = {}
        for n, child in enumerate(children):
            out, _ = child.communicate(timeout=GUARD)
            won[f"w{n}"] = json.loads(out)
            assert child.returncode == 0
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
    winners = [name for names in won.values() for name in names]
    assert sorted(winners) == sorted(f"c{n}" for n in range(count))
    for worker, names in won.items():
        for name in names:  # the stored claim is the winner's
            assert target.read_receipt(name).provider_operation_id == worker
    assert sorted(name for _, name in ids(target)) == sorted(winners)


def test_receipts_are_plain_wire_values_in_their_cells(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    target.publish_receipt(receipt("c1"))
    stored = env.store.read(SPACE, receipt_cell_id(SPACE, target.owner, "c1")).value
    assert stored["schema"] == RECEIPT_SCHEMA and stored["commandId"] == "c1"


def test_a_row_another_writer_changed_is_read_again_not_taken_from_memory(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    target.publish_receipt(receipt("c1"))
    target.publish_receipt(receipt("c2"))
    row_cell = env.store.read(SPACE, target.receipt_cell_id()).value["receipts"][0].id
    with env.store.transaction(SPACE, target.writer) as tx:  # only the row cell, not the root
        tx.write(row_cell, {"commandId": "c1", "status": "garbled"})
        tx.commit()
    target.publish_receipt(receipt("c3"))  # the remembered index is stale: read and check it
    stored = env.store.read(SPACE, target.receipt_cell_id()).value["receipts"]
    assert row_cell not in {link.id for link in stored}  # the garbled row was not carried on
    assert ids(target) == [(None, "c2"), (None, "c3")]


def test_the_root_text_assembled_from_cached_row_texts_is_the_encoded_root(tmp_path: Path) -> None:
    """Commits after the first write the root from each row's cached text; every one of
    them is exactly the text encoding the root gives (the store holds the same value)."""
    from lib.fabric import values

    env = make_env(tmp_path)
    target = env.target()
    written: list[tuple[Any, str]] = []
    original = env.store.transaction

    def recording(space: str, writer: str):  # noqa: ANN202 - the store's own transaction
        tx = original(space, writer)
        write = tx.write

        def recorded(cell: str, value: Any, labels: Any = None, *, text: str | None = None) -> None:
            if cell == target.receipt_cell_id() and text is not None:
                written.append((value, text))
            write(cell, value, labels, text=text)

        tx.write = recorded
        return tx

    env.store.transaction = recording
    for n in range(MAX_ROWS + 3):
        target.publish_receipt(receipt(f"c{n}", producer="p" if n % 3 == 0 else None))
    target.publish_receipt(receipt("c7", "succeeded", completed_at=DONE))
    assert len(written) >= MAX_ROWS  # the cached path wrote (almost) every commit
    for value, text in written:
        assert text == values.dumps(value)
    assert env.store.read(SPACE, target.receipt_cell_id()).value == written[-1][0]


def test_commits_from_the_cache_store_what_rewriting_the_whole_index_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same receipts published on two stores of one owner: one through the cache
    (only new rows planned), one with the cache dropped before every commit (the stored
    index read, validated and planned whole). Republished commands, a command id on two
    queues (its rows then planned whole) and more than MAX_ROWS commands among them:
    the root and every row cell hold the same values."""
    from lib.fabric import receipt_cells

    staged = []
    stage_rows = receipt_cells._stage_rows

    def counted(*args: Any, **kwargs: Any) -> Any:
        result = stage_rows(*args, **kwargs)
        staged.append(result is not None)
        return result

    monkeypatch.setattr(receipt_cells, "_stage_rows", counted)
    cached_env, whole_env = two_stores_of_one_owner(tmp_path)
    cached, whole = cached_env.target(), whole_env.target()
    for n in range(MAX_ROWS + 40):
        command = f"c{n % (MAX_ROWS + 15)}"  # the first 25 again after MAX_ROWS + 15
        producer = "p" if n % 7 == 0 else None
        status = "in-flight" if n % 2 else "succeeded"
        extra = {} if status == "in-flight" else {"completed_at": DONE}
        for target in (cached, whole):
            if target is whole:
                target.receipt_index_cache = None
            target.publish_receipt(receipt(command, status, producer=producer, **extra))
            if n == MAX_ROWS + 30:  # the same id on the owner's queue and a producer's
                target.publish_receipt(receipt(command, status, producer="q", **extra))
    roots = [env.store.read(SPACE, t.receipt_cell_id()).value for env, t in ((cached_env, cached), (whole_env, whole))]
    assert roots[0] == roots[1] and len(roots[0]["receipts"]) == MAX_ROWS
    for link in roots[0]["receipts"]:
        assert cached_env.store.read(SPACE, link.id).value == whole_env.store.read(SPACE, link.id).value
    assert ids(cached) == ids(whole)
    assert staged.count(True) >= MAX_ROWS + 25  # the cache wrote all but the first and the shared


def test_one_commit_claims_a_command_once_when_its_batch_claims_it_twice(tmp_path: Path) -> None:
    """A commit stages its receipts' cells together after its claims are read: a claim
    staged earlier in the batch makes a later claim of the same command lose, as a
    claim committed before it would."""
    from lib.fabric.receipt_cells import ReceiptWrite, commit_receipts

    target = make_env(tmp_path).target()
    first, second = ReceiptWrite(receipt("c1"), claim=True), ReceiptWrite(receipt("c1", claimed_at=DONE), claim=True)
    other = ReceiptWrite(receipt("c2"), claim=True)
    commit_receipts(target, [first, other, second])
    assert (first.accepted, other.accepted, second.accepted) == (True, True, False)
    assert target.read_receipt("c1").claimed_at == CLAIMED
    assert ids(target) == [(None, "c1"), (None, "c2")]


def test_a_batch_commit_stores_what_one_commit_a_receipt_stores(tmp_path: Path) -> None:
    """Claims, terminal receipts (one with a result array: element cells), a producer's
    queue and a receipt published twice, committed as one batch on one store and one
    receipt a commit on another of the same owner: every receipt cell and the index
    rows hold the same values."""
    from lib.fabric.receipt_cells import ReceiptWrite, commit_receipts

    batch_env, single_env = two_stores_of_one_owner(tmp_path)
    batched, single = batch_env.target(), single_env.target()
    for target in (batched, single):
        target.claim_receipt(receipt("c1"))
        target.claim_receipt(receipt("c2", producer="p"))
    writes = [
        (receipt("c1", "succeeded", completed_at=DONE, result={"items": [1, {"id": "x"}]}), False),
        (receipt("c2", "failed", producer="p", completed_at=DONE,
                 error={"code": "boom", "message": "it broke", "retryable": False}), False),
        (receipt("c3"), True),
        (receipt("c1", "succeeded", completed_at=DONE, result={"items": [2]}), False),
    ]
    commit_receipts(batched, [ReceiptWrite(r, claim=claim) for r, claim in writes])
    for r, claim in writes:
        commit_receipts(single, [ReceiptWrite(r, claim=claim)])
    for producer, command in ((None, "c1"), ("p", "c2"), (None, "c3")):
        assert batched.read_receipt(command, producer) == single.read_receipt(command, producer)
        cell = receipt_cell_id(SPACE, batched.owner, command, producer)
        assert batch_env.store.read(SPACE, cell).value == single_env.store.read(SPACE, cell).value
    # (the rows' order differs: a batch keeps a command written twice at its first place)
    rows = [sorted(([r.get("producer") or "", r["commandId"]], {k: v for k, v in r.items() if k != "updatedAt"})
                   for r in t.receipt_rows()) for t in (batched, single)]
    assert rows[0] == rows[1] and len(rows[0]) == 3

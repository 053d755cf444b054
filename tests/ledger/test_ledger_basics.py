"""CommandLedger: round trip, copies, pending markers, fvj1 results, file layout."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest

from lib.fabric.values import Link
from lib.hashing import UNDEFINED
from lib.ledger import LEDGER_SCHEMA, CommandLedger, InvalidReceipt, LedgerError
from tests.ledger.helpers import read_json, receipt


def test_a_missing_file_opens_empty_and_generation_zero_is_on_disk_in_both_slots(tmp_path: Path):
    path = tmp_path / "state" / "ledger.json"
    with CommandLedger.open(path) as ledger:
        assert ledger.generation == 0
        assert ledger.pending_publication_count() == 0
        assert ledger.receipts() == [] and ledger.pending() == []
        assert ledger.get("nope") is None
    for slot in (path, path.with_name("ledger.json.previous")):
        assert read_json(slot) == {
            "schema": LEDGER_SCHEMA, "generation": 0, "receipts": {}, "pendingPublicationCommandIds": []
        }


def test_round_trip_put_mark_published_and_reopen(tmp_path: Path):
    path = tmp_path / "ledger.json"
    with CommandLedger.open(path) as ledger:
        ledger.put(receipt("b", result={"text": "hi"}))
        ledger.put(receipt("a", status="in-flight"))
        assert ledger.generation == 2
        assert ledger.pending_publication_count() == 2
        assert [r["commandId"] for r in ledger.pending()] == ["b", "a"]
        ledger.mark_published("b")
        ledger.mark_published("b")  # no marker: nothing written
        assert ledger.generation == 3
        assert [r["commandId"] for r in ledger.receipts()] == ["a", "b"]
    with CommandLedger.open(path) as again:
        assert again.generation == 3
        assert again.get("b") == receipt("b", result={"text": "hi"})
        assert [r["commandId"] for r in again.pending()] == ["a"]
    newest = read_json(path.with_name("ledger.json.previous"))  # generation 3 went to the inactive slot
    assert newest["generation"] == 3
    assert list(newest["receipts"]) == ["a", "b"]  # sorted by command id
    assert newest["receipts"]["b"]["result"].startswith("fvj1:")
    assert "\n  " in path.read_text("utf-8")  # indented


def test_put_of_a_pending_receipt_moves_its_marker_last_and_replaces_it(tmp_path: Path):
    with CommandLedger.open(tmp_path / "l.json") as ledger:
        ledger.put(receipt("a", status="in-flight"))
        ledger.put(receipt("b"))
        ledger.put(receipt("a", status="failed", error={"code": "x", "message": "y", "retryable": False}))
        assert [r["commandId"] for r in ledger.pending()] == ["b", "a"]
        assert ledger.get("a")["status"] == "failed"


def test_get_and_recovery_return_copies(tmp_path: Path):
    with CommandLedger.open(tmp_path / "l.json") as ledger:
        original = receipt("a", result={"list": [1, 2]})
        ledger.put(original)
        original["result"]["list"].append(3)
        got = ledger.get("a")
        got["result"]["list"].append(4)
        got["status"] = "failed"
        ledger.pending()[0]["result"]["x"] = 1
        ledger.receipts()[0]["sourceId"] = "other"
        assert ledger.get("a") == receipt("a", result={"list": [1, 2]})


def test_fvj1_results_survive_a_restart(tmp_path: Path):
    path = tmp_path / "l.json"
    result = {"u": UNDEFINED, "big": 2**80, "neg": -(2**70), "nan": math.nan, "inf": -math.inf,
              "bytes": b"\x00\xff", "link": Link("of:abc", "did:key:z6Mk"), "/slash": [UNDEFINED, 1.5]}
    with CommandLedger.open(path) as ledger:
        ledger.put(receipt("a", result=result))
    with CommandLedger.open(path) as ledger:
        got = ledger.get("a")["result"]
    assert got["u"] is UNDEFINED and got["/slash"][0] is UNDEFINED
    assert got["big"] == 2**80 and got["neg"] == -(2**70)
    assert math.isnan(got["nan"]) and got["inf"] == -math.inf
    assert got["bytes"] == b"\x00\xff" and got["link"] == Link("of:abc", "did:key:z6Mk")


def test_a_result_outside_the_value_model_is_refused_and_nothing_is_written(tmp_path: Path):
    with CommandLedger.open(tmp_path / "l.json") as ledger:
        with pytest.raises(InvalidReceipt) as info:
            ledger.put(receipt("a", result={"x": object()}))
        assert info.value.code == "invalid-receipt"
        assert ledger.generation == 0


def test_threads_serialize_writes_and_every_commit_counts(tmp_path: Path):
    with CommandLedger.open(tmp_path / "l.json") as ledger:
        def work(n: int) -> None:
            for i in range(10):
                ledger.put(receipt(f"t{n}-{i}"))
                ledger.mark_published(f"t{n}-{i}")
        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # each thread waits for its own 20 changes in turn; concurrent ones may share a write
        assert 20 <= ledger.generation <= 80
        assert ledger.pending_publication_count() == 0 and len(ledger.receipts()) == 40
    with CommandLedger.open(tmp_path / "l.json") as reopened:  # every change reached the disk
        assert reopened.pending_publication_count() == 0 and len(reopened.receipts()) == 40


def test_fake_slow_disk_changes_arriving_during_a_write_share_the_next_write(tmp_path: Path, monkeypatch):
    from lib.ledger import files

    with CommandLedger.open(tmp_path / "l.json") as ledger:
        start = ledger.generation
        real = files.write_durably
        first = threading.Event()
        release = threading.Event()

        def slow(path, data):  # noqa: ANN001 - the first write waits until every thread queued
            if not first.is_set():
                first.set()
                assert release.wait(30)
            real(path, data)

        monkeypatch.setattr(files, "write_durably", slow)
        threads = [threading.Thread(target=ledger.put, args=(receipt(f"c{n}"),)) for n in range(8)]
        threads[0].start()
        assert first.wait(30)
        for t in threads[1:]:
            t.start()
        while ledger._group.queued() < 7:  # the other seven are queued behind the first write
            threading.Event().wait(0.005)
        release.set()
        for t in threads:
            t.join()
        assert ledger.generation == start + 2  # the first write, then one for the other seven
        assert len(ledger.receipts()) == 8


def test_a_second_process_holder_is_refused_and_a_closed_ledger_refuses_use(tmp_path: Path):
    path = tmp_path / "l.json"
    ledger = CommandLedger.open(path)
    with pytest.raises(LedgerError) as info:
        CommandLedger.open(path)  # another open file description: the flock refuses it
    assert info.value.code == "ledger-locked" and info.value.exit_code == 4
    ledger.close()
    with pytest.raises(LedgerError) as closed:
        ledger.put(receipt())
    assert closed.value.code == "ledger-closed"
    CommandLedger.open(path).close()


def test_the_ledger_keeps_the_newest_settled_receipts_and_every_unsettled_one(tmp_path: Path):
    from lib.ledger.ledger import MAX_SETTLED

    with CommandLedger.open(tmp_path / "l.json") as ledger:
        ledger.put(receipt("waiting", status="failed", completedAt="2026-01-01T00:00:00.000Z"))  # never published
        ledger.put(receipt("running", status="in-flight"))
        for n in range(MAX_SETTLED + 40):
            cid = f"done-{n:04d}"
            ledger.put(receipt(cid, completedAt=f"2026-01-02T00:{n // 60:02d}:{n % 60:02d}.000Z"))
            ledger.mark_published(cid)
        kept = {r["commandId"] for r in ledger.receipts()}
    assert {"waiting", "running"} <= kept
    settled = sorted(cid for cid in kept if cid.startswith("done-"))
    assert len(settled) == MAX_SETTLED
    assert settled[0] == "done-0040"  # the 40 oldest completions left the file
    with CommandLedger.open(tmp_path / "l.json") as reopened:
        assert reopened.pending_publication_count() == 2  # "waiting" and "running"

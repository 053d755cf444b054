"""CommandLedger: a marker cleared without a write of its own (`mark_published(defer=True)`)
and a receipt stored as published in one write (`put(published=True)`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.ledger import CommandLedger, LedgerError
from lib.receipts import parse_command_receipt
from tests.ledger.helpers import read_json, receipt


def _on_disk(path: Path) -> dict:
    """The newest slot's document."""
    slots = [read_json(p) for p in (path, path.with_name(path.name + ".previous")) if p.exists()]
    return max(slots, key=lambda doc: doc["generation"])


def test_a_deferred_clear_is_clear_in_memory_at_once_and_written_with_the_next_write(tmp_path: Path):
    path = tmp_path / "l.json"
    with CommandLedger.open(path) as ledger:
        ledger.put(receipt("a"))
        generation = ledger.generation
        ledger.mark_published("a", defer=True)
        # clear for every reader of this ledger, but no write of its own
        assert ledger.pending_publication_count() == 0 and ledger.pending() == []
        assert ledger.generation == generation
        assert _on_disk(path)["pendingPublicationCommandIds"] == ["a"]
        ledger.put(receipt("b"))  # the next write carries the clear
        assert ledger.generation == generation + 1
        assert _on_disk(path)["pendingPublicationCommandIds"] == ["b"]
    with CommandLedger.open(path) as again:
        assert [r["commandId"] for r in again.pending()] == ["b"]


def test_close_writes_the_clears_no_write_carried(tmp_path: Path):
    path = tmp_path / "l.json"
    with CommandLedger.open(path) as ledger:
        ledger.put(receipt("a"))
        generation = ledger.generation
        ledger.mark_published("a", defer=True)
    assert _on_disk(path)["generation"] == generation + 1
    with CommandLedger.open(path) as again:
        assert again.pending() == [] and again.get("a") == receipt("a")


def test_flush_writes_deferred_clears_and_nothing_when_there_are_none(tmp_path: Path):
    path = tmp_path / "l.json"
    with CommandLedger.open(path) as ledger:
        ledger.put(receipt("a"))
        generation = ledger.generation
        ledger.flush()
        assert ledger.generation == generation  # nothing to write
        ledger.mark_published("a", defer=True)
        ledger.mark_published("a", defer=True)  # cleared already: the same one clear
        ledger.flush()
        assert ledger.generation == generation + 1
        assert _on_disk(path)["pendingPublicationCommandIds"] == []


def test_fake_failed_write_keeps_a_deferred_clear_for_the_next_one(tmp_path: Path, monkeypatch):
    from lib.ledger import files

    path = tmp_path / "l.json"
    with CommandLedger.open(path) as ledger:
        ledger.put(receipt("a"))
        ledger.mark_published("a", defer=True)
        real = files.write_durably

        def failing(target, data):  # noqa: ANN001
            raise LedgerError("ledger-write-failed", "disk full (fake)")

        monkeypatch.setattr(files, "write_durably", failing)
        with pytest.raises(LedgerError):
            ledger.put(receipt("b"))
        assert ledger.pending_publication_count() == 0  # still clear in memory; b never stored
        assert ledger.get("b") is None
        monkeypatch.setattr(files, "write_durably", real)
        ledger.put(receipt("c"))
        assert _on_disk(path)["pendingPublicationCommandIds"] == ["c"]


def test_a_put_after_a_deferred_clear_marks_the_receipt_pending_again(tmp_path: Path):
    path = tmp_path / "l.json"
    with CommandLedger.open(path) as ledger:
        ledger.put(receipt("a"))
        ledger.mark_published("a", defer=True)
        ledger.put(receipt("a", status="unknown", error={"code": "x", "message": "y", "retryable": False}))
        assert [r["commandId"] for r in ledger.pending()] == ["a"]
        assert ledger.get("a")["status"] == "unknown"
    assert _on_disk(path)["pendingPublicationCommandIds"] == ["a"]


def test_put_published_stores_a_receipt_without_a_marker_in_one_write(tmp_path: Path):
    path = tmp_path / "l.json"
    with CommandLedger.open(path) as ledger:
        generation = ledger.generation
        claim = {k: v for k, v in receipt("a", status="in-flight").items() if k != "completedAt"}
        ledger.put(claim, published=True)
        assert ledger.generation == generation + 1
        assert ledger.pending() == [] and ledger.get("a")["status"] == "in-flight"
        ledger.put(receipt("b"))
        ledger.put(receipt("b"), published=True)  # a pending one is settled by it
        assert ledger.pending() == []
    assert _on_disk(path)["pendingPublicationCommandIds"] == []


def test_a_command_receipt_is_stored_exactly_as_its_wire_form_would_be(tmp_path: Path):
    """The unchecked path for a validated `CommandReceipt` writes the very bytes the
    checked path writes for its wire form."""
    wire = receipt("a", result={"text": "hi", "n": [1, 2]}, providerOperationId="turn")
    with CommandLedger.open(tmp_path / "one" / "l.json") as one:
        one.put(parse_command_receipt(wire))
    with CommandLedger.open(tmp_path / "two" / "l.json") as two:
        two.put(wire)
    assert (tmp_path / "one" / "l.json.previous").read_bytes() == (tmp_path / "two" / "l.json.previous").read_bytes()

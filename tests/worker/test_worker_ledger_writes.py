"""The worker's ledger writes per command: the in-flight claim and the terminal receipt.
The published receipt's marker is cleared in memory at once (the observer and the count
see it clear) and reaches the disk with the next write or at close."""

from __future__ import annotations

from tests.ledger.helpers import read_json
from tests.worker.helpers import command


def _newest_slot(h) -> dict:  # noqa: ANN001
    directory = h.ledgers.directory
    slots = [read_json(p) for p in (directory / "owner.json", directory / "owner.json.previous")]
    return max(slots, key=lambda doc: doc["generation"])


def test_a_command_costs_two_ledger_writes_and_its_clear_rides_on_the_next_one(make):
    seen = []
    h = make(on_receipt=lambda h, r: seen.append(h.ledgers.pending_publication_count()))
    h.worker.handle([command("p1")])
    h.worker.drain()
    ledger = h.ledgers._ledger(None)
    after_one = ledger.generation
    assert _newest_slot(h)["pendingPublicationCommandIds"] == ["p1"]  # the clear is not written yet
    assert h.ledgers.pending_publication_count() == 0 and seen == [0]  # but clear for every reader
    h.worker.handle([command("p2")])
    h.worker.drain()
    assert ledger.generation == after_one + 2  # claim (carrying p1's clear) and terminal receipt
    assert _newest_slot(h)["pendingPublicationCommandIds"] == ["p2"]
    assert h.ledgers.pending_publication_count() == 0 and seen == [0, 0]
    h.worker.close()
    h.ledgers.close()  # writes p2's clear
    assert _newest_slot(h)["pendingPublicationCommandIds"] == []
    assert _newest_slot(h)["generation"] == after_one + 3
    assert [r["status"] for r in _newest_slot(h)["receipts"].values()] == ["succeeded", "succeeded"]
    assert len(h.driver.calls_of("prompt")) == 2

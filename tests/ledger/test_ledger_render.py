"""The ledger file assembled from kept receipt entries is the whole document's render,
byte for byte, and the settled receipts dropped at the cap are the oldest."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.ledger import CommandLedger
from lib.ledger.files import LedgerError
from lib.ledger.ledger import LEDGER_SCHEMA, MAX_SETTLED
from lib.ledger.render import ReceiptPieces, render_whole
from lib.ledger.settled import SettledOrder, TrackedReceipts
from tests.ledger.helpers import receipt

_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)  # quotes, newlines, controls, non-BMP
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_receipt = st.builds(
    lambda cid, extra: {"schema": "s", "commandId": cid, **extra},
    _text,
    st.dictionaries(_text, _json, max_size=4),
)


@settings(max_examples=100, deadline=None)
@given(
    states=st.lists(
        st.tuples(st.dictionaries(_text, _receipt, max_size=6), st.lists(_text, max_size=3),
                  st.integers(0, 2**53 - 1)),
        min_size=1, max_size=5,
    ),
    keep=st.lists(st.booleans(), min_size=30, max_size=30),
)
def test_assembled_bytes_equal_the_whole_render(states, keep):
    pieces = ReceiptPieces()
    previous: dict[str, dict[str, Any]] = {}
    for (receipts, pending, generation), flags in zip(states, [keep[i:] for i in range(len(states))], strict=False):
        # some receipts carried over as the very same dicts (their entries reused), some new
        carried = {cid: r for (cid, r), flag in zip(previous.items(), flags, strict=False) if flag}
        current = {**carried, **receipts}
        assert pieces.render(LEDGER_SCHEMA, generation, current, pending) == render_whole(
            LEDGER_SCHEMA, generation, current, pending
        )
        previous = current


def test_a_written_ledger_file_is_the_whole_render_of_its_state(tmp_path: Path):
    path = tmp_path / "l.json"
    with CommandLedger.open(path) as ledger:
        for n in range(MAX_SETTLED + 20):
            claim = receipt(f"c{n:04d}", status="in-flight")
            del claim["completedAt"]
            ledger.put(claim)
            ledger.put(receipt(f"c{n:04d}", result={"n": n, "text": 'a "quoted"\nline'}))
            ledger.mark_published(f"c{n:04d}", defer=n % 2 == 0)
        state = ledger._state
        on_disk = ledger._active.read_bytes()
    assert on_disk == render_whole(LEDGER_SCHEMA, state.generation, state.receipts, state.pending)
    assert orjson.loads(on_disk)["generation"] == state.generation


def _dropped_by_sorting(receipts: dict[str, dict[str, Any]], pending: list[str]) -> dict[str, dict[str, Any]]:
    """The rule as it was written before session 22: sort every settled receipt."""
    kept = dict(receipts)
    waiting = set(pending)
    settled = [cid for cid, r in kept.items() if cid not in waiting and r.get("status") != "in-flight"]
    if len(settled) > MAX_SETTLED:
        settled.sort(key=lambda cid: (kept[cid].get("completedAt") or "", cid))
        for cid in settled[: len(settled) - MAX_SETTLED]:
            del kept[cid]
    return kept


def _random_receipts(rng: random.Random, count: int) -> dict[str, dict[str, Any]]:
    receipts = {}
    for n in range(count):
        cid = f"c{rng.randrange(10**9):09d}-{n}"
        completed = rng.choice([None, "", f"2026-01-0{rng.randrange(1, 4)}T00:00:00.000Z"])
        receipts[cid] = receipt(cid, status=rng.choice(["succeeded", "failed", "in-flight"]), completedAt=completed)
        if completed is None:
            del receipts[cid]["completedAt"]
    return receipts


def test_the_settled_receipts_dropped_at_the_cap_are_the_oldest_completions():
    rng = random.Random(22)
    for excess in (0, 1, 2, 7, 60):
        receipts = _random_receipts(rng, MAX_SETTLED + excess + 10)
        pending = rng.sample(sorted(receipts), 5)
        working = TrackedReceipts(receipts)
        SettledOrder().drop_beyond(MAX_SETTLED, receipts, working, pending)
        assert list(working) == list(_dropped_by_sorting(receipts, pending))


def test_the_settled_order_kept_between_writes_drops_what_sorting_every_receipt_drops():
    """Random writes (receipts put, replaced, settled; markers set and cleared), each
    brought up to date from the receipts it touched: the same receipts leave, and the
    assembled file is the whole render, as when everything is rebuilt each time."""
    rng = random.Random(2212)
    order, pieces = SettledOrder(), ReceiptPieces()
    state: dict[str, dict[str, Any]] = _random_receipts(rng, 40)
    pending: list[str] = []
    for step in range(400):
        working, next_pending = TrackedReceipts(state), list(pending)
        for _ in range(rng.randrange(1, 4)):
            if state and rng.random() < 0.3:  # a claim settles, or a receipt is put again
                cid = rng.choice(sorted(state))
            else:
                cid = f"n{step:04d}-{rng.randrange(99)}"
            status = rng.choice(["in-flight", "succeeded", "failed"])
            working[cid] = receipt(cid, status=status, completedAt=f"2026-01-02T00:00:{rng.randrange(60):02d}.000Z")
            if rng.random() < 0.5 and cid not in next_pending:
                next_pending.append(cid)
        if next_pending and rng.random() < 0.5:
            next_pending.remove(rng.choice(next_pending))
        expected = _dropped_by_sorting(dict(working), next_pending)
        order.drop_beyond(MAX_SETTLED, state, working, next_pending)
        assert dict(working) == expected and list(working) == list(expected)
        data = pieces.render(LEDGER_SCHEMA, step, working, next_pending, base=state, touched=working.touched)
        assert data == render_whole(LEDGER_SCHEMA, step, working, next_pending)
        state, pending = working, next_pending


def test_a_ledger_write_that_fails_leaves_the_next_write_whole_fake_failure(tmp_path: Path, monkeypatch):
    """A fault the disk will not show on demand: the durable write raising once."""
    from lib.ledger import ledger as ledger_module

    path = tmp_path / "l.json"
    real = ledger_module.files.write_durably
    with CommandLedger.open(path) as ledger:
        for n in range(MAX_SETTLED + 5):
            ledger.put(receipt(f"c{n:04d}", completedAt=f"2026-01-02T00:{n // 60:02d}:{n % 60:02d}.000Z"))
            ledger.mark_published(f"c{n:04d}")

        def fail_once(target: Path, data: bytes) -> None:
            monkeypatch.setattr(ledger_module.files, "write_durably", real)
            raise LedgerError("ledger-write-failed", "injected")

        monkeypatch.setattr(ledger_module.files, "write_durably", fail_once)
        try:
            ledger.put(receipt("lost", completedAt="2026-01-03T00:00:00.000Z"))
        except LedgerError:
            pass
        ledger.put(receipt("kept", completedAt="2026-01-03T00:00:01.000Z"))
        ledger.mark_published("kept")
        state = ledger._state
        on_disk = ledger._active.read_bytes()
    assert "lost" not in state.receipts and "kept" in state.receipts
    assert on_disk == render_whole(LEDGER_SCHEMA, state.generation, state.receipts, state.pending)
    assert list(state.receipts) == list(_dropped_by_sorting(dict(state.receipts), state.pending))
    assert sum(1 for cid in state.receipts if cid not in state.pending) == MAX_SETTLED

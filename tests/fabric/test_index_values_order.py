"""index_values orders rows and picks the recent ones from one array of times, not an
object a row (session 28): the same order as `row_order`, the same recent rows as
`is_recent` to the microsecond, and no allocation that grows with the rows once done."""

from __future__ import annotations

import random
import tracemalloc
from datetime import UTC, datetime, timedelta

from lib.fabric import session_index as idx
from lib.fabric.packed_rows import packed

NOW = datetime(2026, 12, 7, 5, 0, tzinfo=UTC)


def _rows(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    edge = NOW - idx.RECENT_WINDOW
    times = [
        None, "", "not a time", "2026-12-01T10:00:00", (edge).isoformat(),
        (edge - timedelta(microseconds=1)).isoformat(), (edge + timedelta(microseconds=1)).isoformat(),
        "0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59.999999+00:00", "9999-12-31T23:59:59.999998+00:00",
    ]
    rows = []
    for n in range(count):
        moment = rng.choice(times) if rng.random() < 0.5 else (
            NOW - timedelta(seconds=rng.randrange(-3600, 30 * 86400), microseconds=rng.randrange(10**6))).isoformat()
        row = {"key": f"codex/{rng.randrange(10**9):09d}-{n}", "sourceId": "codex",
               "status": rng.choice(["complete", "complete", "stale", "deleted"])}
        if moment is not None:
            row[rng.choice(["updatedAt", "createdAt"])] = moment
        rows.append(row if rng.random() < 0.5 else packed(row))
    return rows


def _values(rows: list, known: idx.RecentWindow | None = None) -> tuple[dict, dict, idx.RecentWindow]:
    return idx.index_values(owner_did="did:key:z6MkOrder", generated_at=NOW, generation=1, sessions=rows,
                            sources=[], checkouts=[], known=known)


def test_index_values_orders_as_row_order_and_picks_recent_rows_as_is_recent_to_the_microsecond() -> None:
    rows = _rows(600, seed=28)
    recent, complete, window = _values(list(reversed(rows)))
    assert [r["key"] for r in complete["sessions"]] == [r["key"] for r in sorted(rows, key=idx.row_order)]
    expected_recent = [r for r in sorted(rows, key=idx.row_order) if idx.is_recent(r, NOW)]
    assert [r["key"] for r in recent["sessions"]] == [r["key"] for r in expected_recent]
    live = [r for r in rows if idx.is_live(r)]
    assert complete["sessionCount"] == recent["sessionCount"] == len(live)
    assert complete["olderSessionCount"] == len(live) - len(expected_recent)
    times = [idx.row_time(r) for r in live if idx.row_time(r) is not None]
    assert window.oldest_recent == min(t for t in times if NOW - t <= idx.RECENT_WINDOW)
    assert window.newest_older == max(t for t in times if NOW - t > idx.RECENT_WINDOW)
    # a packed row the window timed takes its time from there: the same values again
    again = _values(rows, known=window)
    assert [r["key"] for r in again[1]["sessions"]] == [r["key"] for r in complete["sessions"]]
    assert again[2] == window


def test_index_values_makes_no_object_a_row_on_its_way() -> None:
    """Its peak over the rows it is given: array entries, a sort key, an index and list
    slots a row (about 95 bytes), not also a tuple and datetime (about 200 before)."""
    rows = [packed(r) for r in _rows(20_000, seed=5)]
    for row in rows:  # each packed row's block decoded once: its cache is not ours
        idx.row_time(row)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        values = _values(rows)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert len(values[1]["sessions"]) == len(rows)
    assert peak / len(rows) < 130, peak / len(rows)

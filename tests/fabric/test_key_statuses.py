"""A publication summary's statuses (publication_results.KeyStatuses, session 28): the
same mapping as a dict of each row's status by key, in key order, held as a sorted list
of keys and a byte a row, not a dict entry a row."""

from __future__ import annotations

import gc

from lib.fabric.publication_results import KeyStatuses


def _rows(count: int) -> dict[str, dict[str, str]]:
    statuses = ("complete", "stale", "deleted", "partial")
    return {f"codex/s{n:06d}"[::-1]: {"status": statuses[n % 7 % 4]} for n in range(count)}


def test_key_statuses_are_the_rows_statuses_by_key_in_key_order() -> None:
    rows = _rows(300)
    statuses = KeyStatuses(rows)
    expected = {k: r["status"] for k, r in sorted(rows.items())}
    assert statuses == expected and list(statuses) == list(expected)
    assert list(statuses.values()) == list(expected.values())
    assert statuses["codex/s000007"[::-1]] == "complete" and "codex/none" not in statuses
    assert statuses.get("codex/none") is None and len(statuses) == 300


def test_key_statuses_hold_no_object_a_row_but_the_keys() -> None:
    def held(count: int) -> int:  # objects its parts refer to, the keys (the rows') left out
        statuses = KeyStatuses(_rows(count))
        parts = [getattr(statuses, name) for name in KeyStatuses.__slots__ if name != "_keys"]
        return len(gc.get_referents(*parts))

    assert held(5000) == held(50)

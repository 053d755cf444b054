"""Session 29 (issue 14 goal 4): a publication over a prior table (prior_table.PriorRows)
holds its retained sessions' touches and its resolved rows kept as they are by their
places in that table (touch_table.Touches, resolved_rows.ResolvedRows), and index_values
orders them as places (row_list.RowList): no row object, key string nor dict entry a
session, and the same index values as the rows themselves give."""

from __future__ import annotations

import gc
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lib.fabric import publication as publication_module
from lib.fabric import session_index as idx
from lib.fabric.index_store import read_prior
from lib.fabric.packed_rows import PackedRow, packed
from lib.fabric.prior_table import PriorRows
from lib.fabric.resolved_rows import ResolvedRows
from lib.fabric.row_list import RowList
from tests.fabric.target_helpers import START, descriptor, make_env, publish, rows, snapshot

NAMES = [f"s{n:02d}" for n in range(12)]


def _times(n: int) -> Any:
    # some sessions share a time (ordered by key then), one has none
    return None if n == 5 else START - timedelta(days=n // 2)


def _published(tmp_path: Path) -> Any:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot(name, updated_at=_times(n)) for n, name in enumerate(NAMES)])
    target.graphs.committed.clear()  # the next publication reads its prior from the store: a table
    return target


def test_retained_sessions_are_held_and_resolved_as_places_of_the_prior_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = _published(tmp_path)
    before = rows(target)
    seen: dict[str, Any] = {}
    real = publication_module.resolve

    def resolve(prior: Any, touches: Any, *args: Any, **kwargs: Any) -> Any:
        seen["placed"], seen["others"] = touches._placed_count, dict(touches._others)
        seen["resolved"] = out = real(prior, touches, *args, **kwargs)
        seen["table"], seen["kept"] = prior.rows, list(out.rows.kept_places())
        seen["held"] = [r for r in gc.get_referents(out.rows, out.rows.others) if isinstance(r, PackedRow)]
        return out

    monkeypatch.setattr(publication_module, "resolve", resolve)
    changed = snapshot("s03", messages=3, updated_at=_times(3))
    summary, _ = publish(target, descriptor(), [changed],
                         retained=[snapshot(name, updated_at=_times(n)).summary
                                   for n, name in enumerate(NAMES) if name not in ("s03", "s07")])
    # s07 was neither read nor retained nor listed: the complete inventory deletes it
    assert type(seen["table"]) is PriorRows
    assert seen["placed"] == len(NAMES) - 2 and not seen["others"]  # no key string nor dict entry a touch
    assert len(seen["kept"]) == len(NAMES) - 2  # the retained rows: places
    assert {r["key"] for r in seen["held"]} == {"codex/s03", "codex/s07"}  # only the changed ones are rows
    after = rows(target)
    assert set(after) == set(before)
    assert after["codex/s07"]["status"] == "deleted" and summary.statuses["codex/s07"] == "deleted"
    assert summary.statuses.counts() == {"complete": len(NAMES) - 1, "deleted": 1}
    assert summary.statuses["codex/s01"] == "complete" and "codex/none" not in summary.statuses
    assert list(summary.statuses) == sorted(before) and len(summary.statuses) == len(NAMES)
    for key, row in after.items():
        if key not in ("codex/s03", "codex/s07"):
            assert row == before[key]  # kept as it is


@pytest.mark.parametrize("shuffled", [False, True])
def test_index_values_of_places_equal_those_of_the_rows(tmp_path: Path, shuffled: bool) -> None:
    """The table's own order (the prior index's, row_order) is merged with the other
    rows; a table in another order (`shuffled`: a store written otherwise) is sorted."""
    target = _published(tmp_path)
    table = read_prior(target.graphs, target.cells).rows
    assert type(table) is PriorRows
    if shuffled:
        plain = [dict(row.fields(), previews=[]) for row in table.values()]
        random.Random(7).shuffle(plain)
        table = PriorRows(None, "")
        for row in plain:
            table.add(row, None, False)
    resolved = ResolvedRows(table)
    for at, key in enumerate(table):
        if key == "codex/s04":  # a changed row, newer than all: merged first
            resolved.put(key, packed({**table.fields(at), "updatedAt": idx.iso(START + timedelta(days=1))}))
        elif key == "codex/s09":
            resolved.put(key, packed(idx.with_status(table[key], "deleted")))
        else:
            resolved.keep(at)
    as_rows = list(resolved.values())
    now = START + timedelta(days=2)

    def values(sessions: Any) -> Any:
        return idx.index_values(owner_did="did:key:z6MkPlaces", generated_at=now, generation=2, sessions=sessions,
                                sources=[], checkouts=[])

    recent, complete, window = values(resolved)
    recent_rows, complete_rows, window_rows = values(as_rows)
    assert type(complete["sessions"]) is RowList and type(recent["sessions"]) is RowList
    assert len(complete["sessions"].others) == 2  # the rest are places
    for mine, theirs in ((recent, recent_rows), (complete, complete_rows)):
        assert [dict(r) for r in mine["sessions"]] == [dict(r) for r in theirs["sessions"]]
        assert {k: v for k, v in mine.items() if k != "sessions"} == {
            k: v for k, v in theirs.items() if k != "sessions"}
    assert (window.oldest_recent, window.newest_older) == (window_rows.oldest_recent, window_rows.newest_older)
    assert [r["key"] for r in complete["sessions"]][0] == "codex/s04"

"""What a publication's rows become, decided at commit against the freshest index.

A publication holds the publish lock only to read the prior index and to commit the
new one; its session graphs are written in between, without it. Another publication
may commit meanwhile, so what this one observed is kept as intents, not final rows:

- a `Touch` per session it observed (held as one table: touch_table.py): its own new row (read or retained), "prior" (the
  row the publication read at its start, itself: a retained or unchanged session),
  "partial" (a failed read marks whatever row is there), or "keep" (a newer
  observation had it);
- a `Verdict` per source whose collection ended: the inventory outcome (None for a
  targeted refresh, which changes no other row).

`resolve` turns them into rows and source rows against the index read under the lock
at commit, applying the ordering rules (ordering.py) to that index's ordering state:
so a newer observation committed meanwhile is never undone, and untouched rows are
judged as they are now, not as they were when the publication began.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lib.fabric import session_index as idx
from lib.fabric.index_store import PriorIndex
from lib.fabric.ordering import OrderingState
from lib.fabric.packed_rows import PackedRow, packed
from lib.fabric.prior_table import PriorRows
from lib.fabric.resolved_rows import ResolvedRows
from lib.fabric.source_status import SourceState
from lib.fabric.touch_table import Touch, Touches
from lib.key_table import KeyTable

__all__ = ["Touch", "Touches", "Verdict", "DeletionGuard", "GUARD_DELETIONS", "Resolution", "resolve"]


@dataclass
class Verdict:
    source: SourceState
    outcome: Mapping[str, Any] | None  # None: a targeted refresh (no inventory verdict)
    observed_at: str


# An inventory is suspect when it would delete every live session of its source, or at
# least SUSPECT_MINIMUM of them and more than this share: an emptied or unmounted
# provider home looks like that. A suspect inventory deletes nothing (it counts as
# incomplete) unless deletions are accepted.
DEFAULT_DELETION_SHARE = 0.5
SUSPECT_MINIMUM = 5


@dataclass(frozen=True)
class DeletionGuard:
    accept: bool = False
    share: float = DEFAULT_DELETION_SHARE

    def suspect(self, deleting: int, live: int) -> bool:
        if self.accept or deleting == 0:
            return False
        return deleting == live or (deleting >= SUSPECT_MINIMUM and deleting > self.share * live)


GUARD_DELETIONS = DeletionGuard()


@dataclass
class Resolution:
    # packed rows (packed_rows.py); the prior table's own kept as their places (resolved_rows.py)
    rows: ResolvedRows = field(default_factory=ResolvedRows)
    source_rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    recorded: OrderingState = field(default_factory=OrderingState)
    status_changes: dict[str, str] = field(default_factory=dict)  # untouched rows only
    suspect_sources: dict[str, str] = field(default_factory=dict)  # source id -> warning


def resolve(
    prior: PriorIndex,
    touches: Mapping[str, Touch],
    verdicts: Mapping[str, Verdict],
    *,
    preserve_untouched_status: bool,
    deletions: DeletionGuard = GUARD_DELETIONS,
    read: Mapping[str, Mapping[str, Any]] | None = None,
) -> Resolution:
    """`read`: the rows the publication read at its start, which its "prior" touches name
    (by default `prior`'s)."""
    ordering = prior.ordering
    table = prior.rows if type(prior.rows) is PriorRows else None
    read = prior.rows if read is None else read
    found = 0  # prior rows resolved so far
    items: Any = touches.items()
    if not prior.rows and not read and type(touches) is Touches:
        # no prior row (a first sync): the rows are the touches' own, kept by their place
        out = Resolution(rows=ResolvedRows(touches.table), recorded=ordering.recording())
        items = touches.others()
        _resolve_entries(touches, out, ordering)
    else:
        out = Resolution(rows=ResolvedRows(table), recorded=ordering.recording())  # on the prior's keys (ordering_table.py)
        if table is not None and read is table and type(touches) is Touches and touches.prior is table:
            items = touches.unplaced()
            found = _resolve_placed(table, touches, out)
    for key, touch in items:
        fresh = prior.rows.get(key)
        # a "prior" touch's row is the one read at the start: the fresh one itself when
        # the publication's prior is current (a table row is made once, not twice)
        own = (fresh if read is prior.rows else read[key]) if touch.kind == "prior" else touch.row
        row = _touched_row(fresh, key, touch, own, ordering)
        if row is not None:
            out.rows.put(key, row)
            found += fresh is not None
            if row is own and own is not None:
                out.recorded.record_session(key, touch.sequence)
    touched = len(out.rows)
    for sid, verdict in verdicts.items():
        if verdict.outcome is not None:
            _judge_untouched(prior, touches, verdict, out, preserve=preserve_untouched_status,
                             deletions=deletions)
        _source_row(prior, sid, verdict, out, ordering)
    # Rows of sources this publication did not collect in full (other sources, targeted
    # refreshes) stay as they are: only an inventory verdict changes them.
    if found + len(out.rows) - touched < len(prior.rows):  # the verdicts add prior rows only
        for at, key in enumerate(prior.rows):  # a row is made only when kept here (prior_table.py makes each when asked)
            if key not in out.rows:
                if table is not None:
                    out.rows.keep(at)
                else:
                    out.rows.put(key, _kept(prior.rows[key]))
    return out


def _resolve_placed(table: PriorRows, touches: Touches, out: Resolution) -> int:
    """The touches held by their place in the prior `table` (the publication's prior is
    current): a "prior" or "keep" touch's row is the table's own whichever rule decides
    (`_touched_row` gives the fresh row or `own`, and both are it), so it is kept by its
    place, no row made; a "prior" touch is recorded. Returns how many were resolved."""
    found = 0
    for at, touch in touches.placed():
        if touch.kind == "partial":
            key = table.key(at)
            out.rows.put(key, packed(idx.with_status(table.row(at, key), "partial")))
        else:
            out.rows.keep(at)
            if touch.kind == "prior":
                out.recorded.record_session(table.key(at), touch.sequence)
        found += 1
    return found


_HELD: Any = object()  # stands for a touch's own row held in the touches' table


def _resolve_entries(touches: Touches, out: Resolution, ordering: OrderingState) -> None:
    """The touches held as entries of their own table, when there is no prior row: a
    "row" touch's row that `_touched_row` publishes is kept by its place in that table
    (out.rows's table), no row made (issue 14 goal 4: a first sync made 25,000 rows and
    their dict here, about 7 MB at its commit's peak); any other touch of a key no prior
    row has publishes nothing."""
    table = touches.table
    for at, touch in touches.entries():
        key = table.key(at)
        if _touched_row(None, key, touch, _HELD if touch.kind == "row" else None, ordering) is _HELD:
            out.rows.keep(at)
            out.recorded.record_session(key, touch.sequence)


def _kept(row: Mapping[str, Any]) -> PackedRow:
    """A row kept as it is: a packed row is read-only, so it is kept itself, not copied."""
    return packed(row)


def _touched_row(
    fresh: Mapping[str, Any] | None, key: str, touch: Touch, own: Mapping[str, Any] | None, ordering: OrderingState
) -> Mapping[str, Any] | None:
    """The row of a session this publication observed (`own`, for a "row" or "prior"
    touch), or the fresh row it must keep."""
    kept = _kept(fresh) if fresh is not None else None
    if touch.kind == "keep" or ordering.keeps_newer(key, touch.sequence):
        return kept
    if touch.kind == "partial":
        return packed(idx.with_status(fresh, "partial")) if fresh is not None else None
    live = fresh is not None and idx.is_live(fresh)
    if not ordering.may_add(touch.source_id, touch.sequence, has_live_row=live):
        return kept
    return own


def _judge_untouched(
    prior: PriorIndex,
    touches: Mapping[str, Touch],
    verdict: Verdict,
    out: Resolution,
    *,
    preserve: bool,
    deletions: DeletionGuard,
) -> None:
    """The inventory verdict on the source's rows this publication did not observe."""
    source, outcome = verdict.source, verdict.outcome
    assert outcome is not None
    inventory_complete = source.inventory_complete(outcome)
    listed = outcome.get("listedSessionIds") or ()
    listed = listed if isinstance(listed, KeyTable) else set(listed)  # a KeyTable: end_source's
    if inventory_complete:
        live = deleting = 0
        for key, r in prior.rows.items():
            if r["sourceId"] == source.source_id and idx.is_live(r):
                live += 1
                deleting += key not in touches and r["nativeSessionId"] not in listed
        if deletions.suspect(deleting, live):
            source.suspect, inventory_complete = True, False
            out.suspect_sources[source.source_id] = (
                f"source {source.source_id} no longer lists {deleting} of its {live} published "
                f"sessions; nothing was marked deleted (is its home there?); if they are gone, "
                f"publish again with --accept-deletions"
            )
            source.record_error({"stage": "list", "code": "suspect-deletions", "nativeSessionId": None,
                                 "message": out.suspect_sources[source.source_id]})
    ordering = prior.ordering
    placed = type(touches) is Touches and touches.prior is prior.rows  # a touch held by its place: no look-up by key
    for at, key in enumerate(prior.rows):  # a touched row is not made again (prior_table.py makes each when asked)
        if (placed and touches.placed_at(at)) or key in touches:  # type: ignore[attr-defined]
            continue
        row = prior.rows[key]
        if row["sourceId"] != source.source_id:
            continue
        if inventory_complete and row["nativeSessionId"] not in listed and ordering.may_delete(key, source.sequence):
            made: Mapping[str, Any] = packed(idx.deleted(row, verdict.observed_at))
            if row.get("status") != "deleted":
                out.recorded.record_session(key, source.sequence)
        elif ordering.keeps_newer(key, source.sequence):
            made = _kept(row)  # a newer observation has it: keep it whole
        else:
            made = packed(idx.untouched(row, preserve_status=preserve))
        out.rows.put(key, made)
        if made["status"] != row.get("status"):
            out.status_changes[key] = made["status"]
    if inventory_complete:
        out.recorded.record_complete_source(source.source_id, source.sequence)


def _source_row(prior: PriorIndex, sid: str, verdict: Verdict, out: Resolution, ordering: OrderingState) -> None:
    """The source's row, unless a newer observation wrote it already."""
    source = verdict.source
    previous = next((r for r in prior.sources if r["sourceId"] == sid), None)
    if ordering.keeps_newer_source_row(sid, source.sequence):
        if previous is not None:
            out.source_rows[sid] = dict(previous)
        return
    if verdict.outcome is None:
        out.source_rows[sid] = source.targeted_row(previous, verdict.observed_at)
    else:
        out.source_rows[sid] = source.verdict_row(verdict.outcome, verdict.observed_at)
    out.recorded.record_source_row(sid, source.sequence)

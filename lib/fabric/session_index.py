"""Session index values: session rows, synchronization statuses, the recent/all split
and row order (spec "Session indexes"; a source's row: source_rows.py).

Everything here is a pure function over plain dicts, so each rule can be read (and
tested) on its own; `lib/fabric/publication.py` decides which rule applies when.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from lib.fabric.packed_rows import PackedRow
from lib.fabric.schemas import SESSION_INDEX_SCHEMA
from lib.fabric.values import Link
from lib.git_context import GitMetadata
from lib.git_context import iso_timestamp as iso

RECENT_WINDOW = timedelta(days=7)
MAX_RECENT_MESSAGES = 12
TIMES_KEPT = 4096  # rows of an index whose times its RecentWindow keeps (session 24)

# The normalized summary fields a row repeats (SessionSummary's, without `raw`).
SUMMARY_FIELDS = (
    "title",
    "cwd",
    "createdAt",
    "updatedAt",
    "archived",
    "active",
    "gitRepo",
    "gitBranch",
    "gitWorktreeRoot",
    "startedAs",
)
GIT_FIELDS = ("gitRepo", "gitBranch", "gitWorktreeRoot")


# -- session rows ----------------------------------------------------------------------


def normalized_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The normalized summary fields of a wire summary (`raw` left out)."""
    return {name: summary.get(name) for name in ("nativeSessionId", *SUMMARY_FIELDS)}


def with_git(summary: Mapping[str, Any], metadata: GitMetadata | None) -> dict[str, Any]:
    """A copy carrying the observed checkout (GitMetadata's one rule); no observation
    leaves the fields as they are."""
    out = _copy(summary)
    if metadata is not None:
        out.update(metadata.summary_fields())
    return out


def plain_message(message: Any) -> dict[str, Any]:
    """A normalized message as a plain dict (a model, a captured FrozenDict or a dict)."""
    if hasattr(message, "to_wire"):
        return message.to_wire()
    return dict(message)


def recent_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The previews a row keeps: the last MAX_RECENT_MESSAGES normalized messages."""
    return [dict(m) for m in messages[-MAX_RECENT_MESSAGES:]]


def session_row(
    *,
    key: str,
    source_id: str,
    native_session_id: str,
    driver: str,
    summary: Mapping[str, Any],
    capabilities: Mapping[str, Any],
    messages: Sequence[Mapping[str, Any]],
    manifest: Link,
    snapshot_hash: str,
    manifest_hash: str,
    status: str,
    observed_at: str,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "key": key,
        "sourceId": source_id,
        "nativeSessionId": native_session_id,
        "driver": driver,
    }
    row.update({name: summary.get(name) for name in SUMMARY_FIELDS})
    row.update(
        capabilities=dict(capabilities),
        recentMessages=recent_messages(messages),
        manifest=manifest,
        snapshotHash=snapshot_hash,
        manifestHash=manifest_hash,
        status=status,
        observedAt=observed_at,
    )
    return row


def refreshed_row(
    row: Mapping[str, Any], *, capabilities: Mapping[str, Any], metadata: GitMetadata | None
) -> dict[str, Any]:
    """A kept row (unchanged or retained) with current capabilities and Git context."""
    out = with_git(row, metadata)
    out["capabilities"] = dict(capabilities)
    return out


def refresh_keeps(prior: Mapping[str, Any], capabilities: Mapping[str, Any], metadata: GitMetadata | None) -> bool:
    """Whether `with_status(refreshed_row(prior, ...), "complete")` would equal `prior`:
    then a retained session keeps its prior row itself, not a copy packed again (issue 14
    goal 3). Conservative: capabilities compare by their JSON bytes (same types, same
    order), each Git field by presence, type and value; anything else is refreshed."""
    if prior.get("status") != "complete" or "deletedAt" in prior:
        return False
    if metadata is not None and any(
        name not in prior or type(prior[name]) is not type(value) or prior[name] != value
        for name, value in metadata.summary_fields().items()
    ):
        return False
    try:
        return orjson.dumps(prior.get("capabilities")) == orjson.dumps(dict(capabilities))
    except TypeError:  # what orjson cannot write (an int beyond 64 bits): refreshed
        return False


def _copy(row: Mapping[str, Any]) -> dict[str, Any]:
    """A plain dict copy (a packed row, packed_rows.py, decoded once, not field by field)."""
    return row.plain() if isinstance(row, PackedRow) else dict(row)


# -- synchronization statuses ----------------------------------------------------------


def read_status(complete: bool) -> str:
    """A read snapshot's status: complete, or partial when it reported itself incomplete."""
    return "complete" if complete else "partial"


def with_status(row: Mapping[str, Any], status: str) -> dict[str, Any]:
    """row with a live status (deletedAt only belongs to deleted rows)."""
    out = _copy(row)
    out["status"] = status
    out.pop("deletedAt", None)
    return out


def deleted(row: Mapping[str, Any], at: str) -> dict[str, Any]:
    """A row a complete inventory no longer lists; an already deleted row keeps its time."""
    if row.get("status") == "deleted" and row.get("deletedAt"):
        return _copy(row)
    out = _copy(row)
    out.update(status="deleted", deletedAt=at)
    return out


def untouched(row: Mapping[str, Any], *, preserve_status: bool) -> dict[str, Any]:
    """A prior row this publication did not observe: stale, unless statuses are preserved.

    Deleted rows stay deleted either way: nothing observed them again.
    """
    if preserve_status or row.get("status") == "deleted":
        return _copy(row)
    return with_status(row, "stale")


def is_live(row: Mapping[str, Any]) -> bool:
    return is_live_status(row.get("status"))


def is_live_status(status: Any) -> bool:
    """`is_live` of a row whose status is `status` (read without making the row)."""
    return status != "deleted"


# -- the recent window and row order -------------------------------------------------


def parse_time(text: Any) -> datetime | None:
    """An ISO timestamp as an aware datetime (naive means UTC); None when unreadable."""
    if type(text) is not str or not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def row_time(row: Mapping[str, Any]) -> datetime | None:
    """When the session last changed: updatedAt, else createdAt."""
    return parse_time(row.get("updatedAt")) or parse_time(row.get("createdAt"))


def is_recent(row: Mapping[str, Any], generated_at: datetime) -> bool:
    """Live and updated within RECENT_WINDOW of the index's generation time."""
    moment = row_time(row)
    return is_live(row) and moment is not None and generated_at - moment <= RECENT_WINDOW


_EPOCH = datetime(1, 1, 1, tzinfo=UTC)


def row_order(row: Mapping[str, Any]) -> tuple[float, str]:
    """Newest first, then by key in code point order (never locale order)."""
    moment = row_time(row) or _EPOCH
    return (-moment.timestamp(), row["key"])


_UNIX = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
NO_TIME = -(2**63)  # row_micros of a row without a time (no real time is that far back)


def row_micros(row: Mapping[str, Any]) -> int:
    """row_time as whole microseconds since the Unix epoch (exact: a datetime holds
    microseconds), NO_TIME when the row has none."""
    moment = row_time(row)
    return (moment - _UNIX) // _MICROSECOND if moment is not None else NO_TIME


def order_seconds(micros: int) -> float:
    """What row_order sorts by, newest first: `moment.timestamp()` is this very division."""
    return (micros if micros != NO_TIME else _EPOCH_MICROS) / 10**6


_EPOCH_MICROS = (_EPOCH - _UNIX) // _MICROSECOND


# -- index values ----------------------------------------------------------------------


@dataclass(frozen=True)
class RecentWindow:
    """Which rows an index's recent root holds, by time: the oldest time among them and
    the newest among the live rows it leaves out (None: no such row)."""

    oldest_recent: datetime | None
    newest_older: datetime | None
    # key -> (the row, its row_micros): the next publication's rows that are these same
    # objects (kept rows) are not read for their time again
    times: Mapping[str, tuple[Any, int]] = field(default_factory=dict, compare=False, repr=False)

    def holds(self, generated_at: datetime) -> bool:
        """Whether the same rows are recent at `generated_at` (none ages out, none comes in)."""
        return (self.oldest_recent is None or generated_at - self.oldest_recent <= RECENT_WINDOW) and (
            self.newest_older is None or generated_at - self.newest_older > RECENT_WINDOW)


def index_values(
    *,
    owner_did: str,
    generated_at: datetime,
    generation: int,
    sessions: Iterable[Mapping[str, Any]],
    sources: Iterable[Mapping[str, Any]],
    checkouts: Sequence[Mapping[str, Any]],
    known: RecentWindow | None = None,
) -> tuple[dict[str, Any], dict[str, Any], RecentWindow]:
    """The recent and complete index values for one generation, and the RecentWindow of
    the recent one.

    Recent: live rows updated within seven days. All: every live row and the retained
    deleted rows. Both carry the same counts, sources and checkouts. A row that is the
    very object `known` (the prior commit's window) timed takes that time.
    """
    times = {} if known is None else known.times
    if getattr(sessions, "table", None) is not None:  # resolved_rows.ResolvedRows over the prior table
        from lib.fabric.row_list import ordered_rows  # it reads this module's row order

        rows, micros = ordered_rows(sessions, times)  # type: ignore[arg-type]
        status = rows.status
    else:
        rows, micros = in_row_order(list(sessions.values() if isinstance(sessions, Mapping) else sessions), times)  # type: ignore[assignment]
        status = lambda at: rows[at].get("status")  # noqa: E731
    live = 0
    picked: list[int] = []  # the recent rows' places in `rows`
    oldest = newest_older = None
    # recent: generated_at - moment <= RECENT_WINDOW, in whole microseconds (exact)
    since = (generated_at - _UNIX - RECENT_WINDOW) // _MICROSECOND
    for at, moment in enumerate(micros):
        if not is_live_status(status(at)):
            continue
        live += 1
        if moment == NO_TIME:  # neither recent nor older
            continue
        if moment >= since:
            picked.append(at)
            oldest = moment if oldest is None or moment < oldest else oldest
        elif newest_older is None or moment > newest_older:
            newest_older = moment
    recent_count = len(picked)
    recent: Any = rows.chosen(picked) if type(rows) is not list else [rows[at] for at in picked]
    del picked
    # packed rows only (a plain row is copied into the value: it is never met again),
    # and not for a large index, whose window would hold an entry a row between commits;
    # a row held as its table's place is not (a row made from it later is another object)
    window = RecentWindow(_at(oldest), _at(newest_older), {
        r["key"]: (r, micros[at]) for at, r in _not_placed(rows) if type(r) is not dict
    } if len(rows) <= TIMES_KEPT else {})
    del micros
    source_rows = sorted(sources, key=lambda r: r["sourceId"])
    stamp = iso(generated_at)

    def value(bucket: str, chosen: Any) -> dict[str, Any]:
        # a plain row is copied; a packed one (packed_rows.py) is read-only: kept itself
        listed = chosen if type(chosen) is list else chosen.others
        for at, r in enumerate(listed):
            if type(r) is dict:
                listed[at] = dict(r)
        return {
            "schema": SESSION_INDEX_SCHEMA,
            "ownerDid": owner_did,
            "bucket": bucket,
            "generatedAt": stamp,
            "generation": generation,
            "sessionCount": live,
            "olderSessionCount": live - recent_count,
            "sources": [dict(r) for r in source_rows],
            "sessions": chosen,
            "checkouts": [dict(r) for r in checkouts],
        }

    return value("recent", recent), value("all", rows), window


def in_row_order(
    rows: list[Mapping[str, Any]], times: Mapping[str, tuple[Any, int]]
) -> tuple[list[Mapping[str, Any]], array[int]]:
    """`rows` in row_order, and each one's row_micros (read once: a packed row reads it
    from its block), without a tuple, datetime or sort key a row (issue 14 goal 4: at
    25,000 rows those were about 4 MB): by key, then (stably) by time, newest first."""
    rows.sort(key=_key)
    micros = array("q", [0]) * len(rows)
    for at, r in enumerate(rows):
        known = times.get(r["key"])
        micros[at] = known[1] if known is not None and known[0] is r else row_micros(r)
    # reverse keeps a stable sort's order among equal times: by key
    order = sorted(range(len(rows)), key=lambda at: order_seconds(micros[at]), reverse=True)
    rows[:] = [rows[at] for at in order]
    return rows, array("q", map(micros.__getitem__, order))


def _not_placed(rows: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """Each row of `rows` (a list, or a row_list.RowList's rows not held as places) and its index."""
    if type(rows) is list:
        return enumerate(rows)
    return ((at, rows.others[-1 - place]) for at, place in enumerate(rows.places) if place < 0)


def _key(row: Mapping[str, Any]) -> Any:
    return row["key"]


def _at(micros: int | None) -> datetime | None:
    """The aware datetime of row_micros (None for None)."""
    return None if micros is None else _UNIX + micros * _MICROSECOND


def empty_index_value(owner_did: str, bucket: str, generated_at: datetime) -> dict[str, Any]:
    """The value open() initialises an absent index root with (generation 0)."""
    return {
        "schema": SESSION_INDEX_SCHEMA,
        "ownerDid": owner_did,
        "bucket": bucket,
        "generatedAt": iso(generated_at),
        "generation": 0,
        "sessionCount": 0,
        "olderSessionCount": 0,
        "sources": [],
        "sessions": [],
        "checkouts": [],
    }


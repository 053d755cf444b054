"""What a publication takes in and gives back: the prepared-session shape it reads,
the outcome of each session, and the summary of the whole publication."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from heapq import merge
from itertools import chain
from typing import Any, Literal, Protocol

from lib.errors import CodedError
from lib.fabric.session_graph import PreparedChunk

__all__ = ["Action", "KeyStatuses", "PreparedLike", "PublicationError", "PublicationSummary", "PublishedOutcome"]

Action = Literal[
    "written", "unchanged", "skipped-newer", "retained", "retained-unbacked", "failed",
    "deleted", "stale",  # an untouched row the source's inventory verdict changed
]


class PreparedLike(Protocol):
    key: str
    source_id: str
    native_session_id: str
    driver: str | None
    summary: Mapping[str, Any]
    normalized_messages: Sequence[Any]
    revision: str | None
    complete: bool
    chunks: Sequence[PreparedChunk]
    snapshot_hash: str


@dataclass(frozen=True)
class PublishedOutcome:
    key: str
    action: Action
    status: str | None

    def to_wire(self) -> dict[str, Any]:
        return {"key": self.key, "action": self.action, "status": self.status}


class KeyStatuses(Mapping[str, str]):
    """Each published row's status by key, in key order: each status as a byte naming one
    of the few distinct statuses, not a dict entry a row (issue 14 goal 4: the summary
    outlives the commit; at 25,000 rows a dict and the sorted (key, row) pairs it was
    made from were about 3 MB). The rows a resolved_rows.ResolvedRows holds as places of
    the prior table keep their status there, a byte a table row, keyed by the table (no
    key string a row: at 25,000 rows the sorted keys were 2.3 MB held to the sync's end);
    any other row's key is in one sorted list. Iterating sorts the keys then."""

    __slots__ = ("_keys", "_codes", "_statuses", "_table", "_table_codes", "_table_count")

    def __init__(self, rows: Mapping[str, Mapping[str, Any]]) -> None:
        self._statuses: list[str] = []
        self._table = getattr(rows, "table", None)  # a ResolvedRows' prior table
        self._table_codes, self._table_count = bytearray(), 0
        others = rows
        if self._table is not None:
            self._table_codes = bytearray(b"\xff") * len(self._table)  # 0xff: no row kept there
            for at in rows.kept_places():  # type: ignore[attr-defined]
                self._table_codes[at] = self._code(self._table.status(at))
                self._table_count += 1
            others = rows.others  # type: ignore[attr-defined]
        self._keys = sorted(others)
        self._codes = bytearray(len(self._keys))
        for at, key in enumerate(self._keys):
            self._codes[at] = self._code(others[key]["status"])

    def _code(self, status: str) -> int:
        if status in self._statuses:
            return self._statuses.index(status)
        self._statuses.append(status)
        return len(self._statuses) - 1

    def __getitem__(self, key: str) -> str:
        at = bisect_left(self._keys, key)
        if at < len(self._keys) and self._keys[at] == key:
            return self._statuses[self._codes[at]]
        place = self._table.position(key) if self._table_count else None
        if place is None or self._table_codes[place] == 0xFF:
            raise KeyError(key)
        return self._statuses[self._table_codes[place]]

    def __iter__(self) -> Iterator[str]:
        if not self._table_count:
            return iter(self._keys)
        kept = sorted(self._table.key(at) for at, code in enumerate(self._table_codes) if code != 0xFF)  # type: ignore[union-attr]
        return merge(self._keys, kept)

    def __len__(self) -> int:
        return len(self._keys) + self._table_count

    def values(self) -> Any:  # in key order
        if not self._table_count:
            return (self._statuses[code] for code in self._codes)
        return map(self.__getitem__, self)

    def counts(self) -> dict[str, int]:
        """How many rows have each status (in no order), no key made."""
        counts = dict.fromkeys(self._statuses, 0)
        for code in chain(self._codes, (c for c in self._table_codes if c != 0xFF)):
            counts[self._statuses[code]] += 1
        return {status: n for status, n in counts.items() if n}

    def __repr__(self) -> str:
        return f"KeyStatuses({dict(self.items())!r})"


@dataclass
class PublicationSummary:
    generation: int
    session_count: int
    statuses: Mapping[str, str]  # KeyStatuses, in key order
    sources: list[dict[str, Any]]
    written: int = 0
    unchanged: int = 0
    cells_written: int = 0
    # rows no add_* call observed whose status the inventory verdict changed (to
    # deleted or stale), in key order
    status_changes: list[PublishedOutcome] = field(default_factory=list)
    # sources whose inventory would have deleted too much: nothing of theirs was deleted
    suspect_sources: dict[str, str] = field(default_factory=dict)


class PublicationError(CodedError):
    """A publication used out of order (a source never begun, a closed publication)."""

"""What a publication takes in and gives back: the prepared-session shape it reads,
the outcome of each session, and the summary of the whole publication."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
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
    """Each published row's status by key, in key order: the keys in one sorted list and
    each status as a byte naming one of the few distinct statuses, not a dict entry a row
    (issue 14 goal 4: the summary outlives the commit; at 25,000 rows a dict and the
    sorted (key, row) pairs it was made from were about 3 MB)."""

    __slots__ = ("_keys", "_codes", "_statuses")

    def __init__(self, rows: Mapping[str, Mapping[str, Any]]) -> None:
        self._keys = sorted(rows)
        self._statuses: list[str] = []
        codes: dict[str, int] = {}
        self._codes = bytearray(len(self._keys))
        for at, key in enumerate(self._keys):
            status = rows[key]["status"]
            code = codes.get(status)
            if code is None:
                code = codes[status] = len(self._statuses)
                self._statuses.append(status)
            self._codes[at] = code

    def __getitem__(self, key: str) -> str:
        at = bisect_left(self._keys, key)
        if at == len(self._keys) or self._keys[at] != key:
            raise KeyError(key)
        return self._statuses[self._codes[at]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def values(self) -> Any:  # each status by its code, no look-up by key
        return (self._statuses[code] for code in self._codes)

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

"""What a publication takes in and gives back: the prepared-session shape it reads,
the outcome of each session, and the summary of the whole publication."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from lib.errors import CodedError
from lib.fabric.session_graph import PreparedChunk

__all__ = ["Action", "PreparedLike", "PublicationError", "PublicationSummary", "PublishedOutcome"]

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


@dataclass
class PublicationSummary:
    generation: int
    session_count: int
    statuses: dict[str, str]
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

"""Reading what a target published: the indexes, one session's manifest, its events.

Readers validate what they use (lib/fabric/schemas.py) and hydrate one session at a
time: listing sessions never loads a transcript, and events are read one chunk at a
time, so memory stays bounded by one chunk.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lib.errors import NotFoundError
from lib.fabric.graph_read import read_graph_value
from lib.fabric.index_store import PRESERVED_LINK_FIELDS, IndexCells
from lib.fabric.schemas import ParsedIndex, parse_chunk, parse_manifest, parse_session_index
from lib.fabric.store import Store
from lib.fabric.values import Link

# A manifest's chunk descriptors keep their chunk links: `show` reads chunks lazily.
MANIFEST_PRESERVED_FIELDS = frozenset({"chunk"})


class SessionNotFound(NotFoundError, LookupError):
    """No published session has the key asked for."""


class SessionReader:
    def __init__(self, store: Store, space: str, owner: str) -> None:
        self.store = store
        self.space = space
        self.cells = IndexCells.of(space, owner)

    def index(self, bucket: str = "all") -> ParsedIndex | None:
        """The recent or complete index, rows with their manifest links; None if unpublished."""
        cell = self.cells.all if bucket == "all" else self.cells.recent
        if self.store.read(self.space, cell) is None:
            return None
        value = read_graph_value(self.store, self.space, cell, preserve_link_fields=PRESERVED_LINK_FIELDS)
        return parse_session_index(value, bucket=bucket)

    def row(self, key: str) -> dict[str, Any]:
        index = self.index("all")
        for row in index.sessions if index else ():
            if row["key"] == key:
                return row
        raise SessionNotFound("session-not-found", f"no published session has the key {key!r}")

    def manifest(self, key: str) -> dict[str, Any]:
        """One session's manifest, hydrated except for its chunk links."""
        return self.manifest_of(self.row(key))

    def manifest_of(self, row: dict[str, Any]) -> dict[str, Any]:
        """The manifest an index row links to (`row` as `row(key)` returns it)."""
        link = row.get("manifest")
        if not isinstance(link, Link):
            raise SessionNotFound("session-not-found", f"session {row.get('key')!r} has no manifest link")
        value = read_graph_value(self.store, self.space, link.id, preserve_link_fields=MANIFEST_PRESERVED_FIELDS)
        return parse_manifest(value)

    def events(self, manifest: dict[str, Any]) -> Iterator[tuple[int, Any]]:
        """(part, event) in order, one chunk in memory at a time."""
        for descriptor in sorted(manifest["chunks"], key=lambda d: d["part"]):
            link = descriptor.get("chunk")
            if not isinstance(link, Link):
                continue
            chunk = parse_chunk(read_graph_value(self.store, self.space, link.id))
            for event in chunk["events"]:
                yield chunk["part"], event

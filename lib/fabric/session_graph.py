"""One session's graph: content-addressed event chunks, then its manifest version.

Chunk root cause: {spaceDid, ownerDid, agentConnector: "session-chunk", sourceId,
nativeSessionId, part, contentHash}; a chunk that already exists is never rewritten
(the same cause always holds the same content). The manifest's cause names the
hash of the complete manifest value (`session-version`, with the producing driver),
so a changed snapshot writes new cells and never mutates the graph that the prior
indexes reach. Each chunk and the manifest is its own transaction, committed and
released before the next: memory stays bounded by one chunk plus the manifest, and
a publication that dies midway leaves only unreachable new cells behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from lib.fabric.cell_id import cell_id, session_chunk_cause, session_version_cause
from lib.fabric.graph_commit import commit_graph
from lib.fabric.graph_plan import plan_graph
from lib.fabric.schemas import (
    SESSION_ARRAY_SCOPE,
    SESSION_CHUNK_SCHEMA,
    SESSION_EVENTS_ARRAY_SCOPE,
    SESSION_SCHEMA,
    scope,
)
from lib.fabric.store import Labels, Store
from lib.fabric.values import Link
from lib.hashing import content_hash


class PreparedChunk(Protocol):
    part: int
    events: Sequence[Any]
    byte_length: int
    event_count: int
    content_hash: str


@dataclass(frozen=True)
class GraphTarget:
    """Where and as whom session graphs are written."""

    store: Store
    space: str
    owner: str
    writer: str
    labels: Labels
    # index_store's memory of the index this process last committed (see read_prior)
    committed: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class SessionGraphWrite:
    manifest: Link
    manifest_hash: str
    chunks_written: int
    chunks_reused: int
    manifest_written: bool
    cells_written: int


def chunk_value(owner: str, key: str, chunk: PreparedChunk) -> dict[str, Any]:
    return {
        "schema": SESSION_CHUNK_SCHEMA,
        "ownerDid": owner,
        "key": key,
        "part": chunk.part,
        "contentHash": chunk.content_hash,
        "events": chunk.events,
    }


def chunk_descriptor(chunk: PreparedChunk, link: Link) -> dict[str, Any]:
    return {
        "part": chunk.part,
        "chunk": link,
        "contentHash": chunk.content_hash,
        "byteLength": chunk.byte_length,
        "eventCount": chunk.event_count,
    }


def manifest_value(
    *,
    owner: str,
    key: str,
    source_id: str,
    driver: str,
    native_session_id: str,
    metadata: Mapping[str, Any],
    summary: Mapping[str, Any],
    messages: Sequence[Any],
    chunks: Sequence[Mapping[str, Any]],
    snapshot_hash: str,
    revision: str | None,
    observed_at: str,
    complete: bool,
) -> dict[str, Any]:
    """The manifest: summary, every normalized message, chunk descriptors (links, never
    inline events), snapshot hash, optional revision, observation time, completeness."""
    value: dict[str, Any] = {
        "schema": SESSION_SCHEMA,
        "ownerDid": owner,
        "key": key,
        "sourceId": source_id,
        "driver": driver,
        "nativeSessionId": native_session_id,
        "metadata": metadata,
        "summary": dict(summary),
        "normalized": {"messages": messages},
        "chunks": list(chunks),
        "snapshotHash": snapshot_hash,
        "observedAt": observed_at,
        "complete": complete,
    }
    if revision is not None:
        value["revision"] = revision
    return value


def write_chunk(
    target: GraphTarget, *, key: str, source_id: str, native_session_id: str, chunk: PreparedChunk
) -> tuple[Link, int]:
    """Write one chunk graph unless it exists; returns its link and the cells written."""
    cause = session_chunk_cause(
        target.space,
        target.owner,
        source_id=source_id,
        native_session_id=native_session_id,
        part=chunk.part,
        content_hash=chunk.content_hash,
    )
    link = Link(cell_id(cause), target.space)
    if target.store.read(target.space, link.id) is not None:
        return link, 0  # content addressed: the chunk graph is already complete
    graph = plan_graph(
        cause,
        chunk_value(target.owner, key, chunk),
        scope(
            target.space,
            target.owner,
            SESSION_EVENTS_ARRAY_SCOPE,
            sourceId=source_id,
            nativeSessionId=native_session_id,
            part=chunk.part,
            contentHash=chunk.content_hash,
        ),
    )
    result = commit_graph(target.store, target.space, target.writer, target.labels, graph)
    return link, len(result.written)


def write_session_graph(
    target: GraphTarget,
    *,
    key: str,
    source_id: str,
    native_session_id: str,
    driver: str,
    chunks: Sequence[PreparedChunk],
    manifest_fields: Mapping[str, Any],
) -> SessionGraphWrite:
    """Chunks first, one transaction each, then the manifest version that links them.

    `manifest_fields` are manifest_value's remaining keyword arguments (metadata,
    summary, messages, snapshot_hash, revision, observed_at, complete).
    """
    descriptors = []
    written = reused = cells = 0
    for chunk in chunks:
        link, count = write_chunk(
            target, key=key, source_id=source_id, native_session_id=native_session_id, chunk=chunk
        )
        descriptors.append(chunk_descriptor(chunk, link))
        cells += count
        written += count > 0
        reused += count == 0
    value = manifest_value(
        owner=target.owner,
        key=key,
        source_id=source_id,
        driver=driver,
        native_session_id=native_session_id,
        chunks=descriptors,
        **manifest_fields,
    )
    # The hash of the complete value (links as their JSON form) identifies the graph the
    # planner derives from it, and is known before planning, so the array scope and the
    # cause can both name it.
    manifest_hash = content_hash(value)
    cause = session_version_cause(
        target.space,
        target.owner,
        source_id=source_id,
        native_session_id=native_session_id,
        driver=driver,
        content_hash=manifest_hash,
    )
    root = cell_id(cause)
    manifest_written = target.store.read(target.space, root) is None
    if manifest_written:
        graph = plan_graph(
            cause,
            value,
            scope(
                target.space,
                target.owner,
                SESSION_ARRAY_SCOPE,
                sourceId=source_id,
                nativeSessionId=native_session_id,
                manifestHash=manifest_hash,
            ),
        )
        result = commit_graph(target.store, target.space, target.writer, target.labels, graph)
        cells += len(result.written)
    return SessionGraphWrite(
        manifest=Link(root, target.space),
        manifest_hash=manifest_hash,
        chunks_written=written,
        chunks_reused=reused,
        manifest_written=manifest_written,
        cells_written=cells,
    )

"""One session's graph: content-addressed event chunks, then its manifest version.

Chunk root cause: {spaceDid, ownerDid, agentConnector: "session-chunk", sourceId,
nativeSessionId, part, contentHash}; a chunk that already exists is never rewritten
(the same cause always holds the same content). The manifest's cause names the
hash of the complete manifest value (`session-version`, with the producing driver),
so a changed snapshot writes new cells and never mutates the graph that the prior
indexes reach. New graphs are staged in a GraphBatch (graph_batch.py) and committed
with other sessions' graphs, a graph never split between two commits: memory stays
bounded by one session plus the batch, and a publication that dies midway leaves only
unreachable new cells behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from lib.fabric.cell_id import cell_id, session_chunk_cause, session_version_cause
from lib.fabric.graph_batch import GraphBatch
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
from lib.gc_pause import gc_paused
from lib.hashing import Encoded, content_hash, encode_value, object_hash


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


def manifest_content_hash(value: Mapping[str, Any], messages_stream: bytes | None) -> str:
    """content_hash(value) of a manifest; with the messages' stream from preparation, the
    messages (most of a manifest) are spliced in as that stream, not encoded again."""
    if messages_stream is None:
        return content_hash(value)
    normalized = _NORMALIZED_HEAD + messages_stream + b"\x00"  # {"messages": <stream>}
    return object_hash({**value, "normalized": Encoded(normalized)})


_NORMALIZED_HEAD = b"\x11" + encode_value("messages")


@gc_paused()  # planning makes and drops many containers, and no cycles
def write_session_graph(
    target: GraphTarget,
    *,
    key: str,
    source_id: str,
    native_session_id: str,
    driver: str,
    chunks: Sequence[PreparedChunk],
    manifest_fields: Mapping[str, Any],
    batch: GraphBatch | None = None,
    messages_stream: bytes | None = None,
) -> SessionGraphWrite:
    """The session's chunk graphs, then the manifest version that links them, each
    written unless it exists, staged in `batch` (committed when the batch is; without
    one, committed before this returns).

    Every cell ID is known before anything is written (chunk and manifest causes name
    their content hashes), so one query finds which graphs exist. `manifest_fields`
    are manifest_value's remaining keyword arguments (metadata, summary, messages,
    snapshot_hash, revision, observed_at, complete). `messages_stream`, when given, is the
    value-hash stream of exactly those messages (PreparedSession.messages_stream).
    """
    own = batch is None
    batch = batch or GraphBatch(target)
    causes = [
        session_chunk_cause(
            target.space, target.owner, source_id=source_id, native_session_id=native_session_id,
            part=chunk.part, content_hash=chunk.content_hash,
        )
        for chunk in chunks
    ]
    links = [Link(cell_id(cause), target.space) for cause in causes]
    value = manifest_value(
        owner=target.owner,
        key=key,
        source_id=source_id,
        driver=driver,
        native_session_id=native_session_id,
        chunks=[chunk_descriptor(chunk, link) for chunk, link in zip(chunks, links, strict=True)],
        **manifest_fields,
    )
    # The hash of the complete value (links as their JSON form) identifies the graph the
    # planner derives from it, and is known before planning, so the array scope and the
    # cause can both name it.
    manifest_hash = manifest_content_hash(value, messages_stream)
    cause = session_version_cause(
        target.space,
        target.owner,
        source_id=source_id,
        native_session_id=native_session_id,
        driver=driver,
        content_hash=manifest_hash,
    )
    root = cell_id(cause)
    roots = [link.id for link in links] + [root]
    present = target.store.existing(target.space, [r for r in roots if not batch.pending(r)], roots=True)
    present.update(r for r in roots if batch.pending(r))
    written = reused = cells = 0
    for chunk, chunk_cause, link in zip(chunks, causes, links, strict=True):
        if link.id in present:
            reused += 1
            continue
        graph = plan_graph(
            chunk_cause,
            chunk_value(target.owner, key, chunk),
            scope(
                target.space, target.owner, SESSION_EVENTS_ARRAY_SCOPE, sourceId=source_id,
                nativeSessionId=native_session_id, part=chunk.part, contentHash=chunk.content_hash,
            ),
        )
        cells += batch.add(graph)
        written += 1
        present.add(link.id)  # a chunk repeated in one session is staged once
    manifest_written = root not in present
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
        cells += batch.add(graph)
    batch.end_session()
    if own:
        batch.flush()
    return SessionGraphWrite(
        manifest=Link(root, target.space),
        manifest_hash=manifest_hash,
        chunks_written=written,
        chunks_reused=reused,
        manifest_written=manifest_written,
        cells_written=cells,
    )

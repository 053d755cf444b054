"""prepare_session: a snapshot's stable key, captured values, event chunks and hashes.

This is the spec's `prepareSession(sourceId, snapshot, targetChunkBytes?)`: everything a
publisher needs, computed without touching Fabric. The summary and normalized messages
are captured (immutable, canonical) before anything is measured or hashed; each event is
hashed and serialised once into its chunk's immutable text (lib.chunking), which is what
everything after preparation reads. `consume=True` empties the snapshot's events list
as it goes (each parsed event freed once prepared), for callers that hand it over.

`snapshotHash` is the content hash of

    {"summary", "normalizedMessages", "revision" (null when absent), "complete",
     "chunks": [{"part", "contentHash", "byteLength", "eventCount"}, ...]}

so it covers the chunk structure and content hashes, not the events again.

A PreparedSession is written as one `prepared` JSON-lines record. `iter_json_pieces()`
yields its text piece by piece (each chunk's events joined on their own, from the texts
measured during chunking), so writing a 50 MB session never builds one 50 MB string.
`PreparedSession.from_record(obj)` reads a record back, re-capturing and re-measuring
every chunk and refusing a record whose hashes or lengths do not match its content.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from pydantic import ValidationError

from lib.canonical import capture_encoded
from lib.chunking import (
    DEFAULT_TARGET_CHUNK_BYTES,
    EventChunk,
    build_chunk,
    compact_json,
    iter_chunks,
)
from lib.errors import CodedError
from lib.gc_pause import gc_paused
from lib.hashing import Encoded, clear_string_cache, object_hash
from lib.memory_release import note_large_session
from lib.session_key import normalize_key_parts, session_key
from lib.types import NativeSessionSnapshot, NormalizedMessage, SessionSummary

__all__ = ["PrepareError", "PreparedSession", "prepare_session", "snapshot_hash"]

RECORD = "prepared"
CACHE_RESET_BYTES = 8 * 1024 * 1024
_MESSAGE_BATCH = 512


class PrepareError(CodedError, ValueError):
    """A prepared record that cannot be trusted. `code` is stable, `message` for people."""



def snapshot_hash(
    summary: Any,
    normalized_messages: Any,
    revision: str | None,
    complete: bool,
    descriptors: list[dict[str, Any]],
) -> str:
    """The snapshot hash over captured summary, messages, and chunk descriptors.

    summary and normalized_messages may be lib.hashing.Encoded streams of the captures.
    """
    return object_hash(
        {
            "summary": summary,
            "normalizedMessages": normalized_messages,
            "revision": revision,
            "complete": complete,
            "chunks": descriptors,
        }
    )


@dataclass(frozen=True, slots=True)
class PreparedSession:
    key: str
    source_id: str
    native_session_id: str
    driver: str | None
    summary: Any
    normalized_messages: tuple[Any, ...]
    revision: str | None
    complete: bool
    chunks: tuple[EventChunk, ...]
    snapshot_hash: str
    # capture vouched for every number in summary and messages (orjson writes them)
    exact_views: bool = field(default=False, repr=False, compare=False)
    # normalized_messages' value-hash stream from capture: the manifest's hash splices it
    # in (session_graph) instead of encoding every message again
    messages_stream: bytes | None = field(default=None, repr=False, compare=False)

    def descriptors(self) -> list[dict[str, Any]]:
        return [chunk.descriptor() for chunk in self.chunks]

    @property
    def event_count(self) -> int:
        return sum(chunk.event_count for chunk in self.chunks)

    def head(self) -> dict[str, Any]:
        """Every record field except `chunks`."""
        return {
            "record": RECORD,
            "key": self.key,
            "sourceId": self.source_id,
            "nativeSessionId": self.native_session_id,
            "driver": self.driver,
            "summary": self.summary,
            "normalizedMessages": self.normalized_messages,
            "revision": self.revision,
            "complete": self.complete,
            "snapshotHash": self.snapshot_hash,
        }

    def iter_json_pieces(self) -> Iterator[str]:
        """The record's compact JSON text in pieces (no newline). Normalized messages go
        out in batches and each chunk's events as the text they were measured as, so no
        piece is much larger than a chunk and writing needs no more extra memory."""
        head = self.head()
        messages = head.pop("normalizedMessages")
        tail = {name: head.pop(name) for name in ("revision", "complete", "snapshotHash")}
        text, _ = compact_json(head, self.exact_views)
        yield text[:-1] + ',"normalizedMessages":['
        for start in range(0, len(messages), _MESSAGE_BATCH):
            text, _ = compact_json(messages[start : start + _MESSAGE_BATCH], self.exact_views)
            yield ("," if start else "") + text[1:-1]
        text, _ = compact_json(tail, True)  # strings, a bool, null: no numbers
        yield "]," + text[1:-1] + ',"chunks":['
        for index, chunk in enumerate(self.chunks):
            text, _ = compact_json(chunk.descriptor(), True)
            yield ("," if index else "") + text[:-1] + ',"events":'
            yield chunk.json_text
            yield "}"
        yield "]}"

    def write_record(self, out: IO[str]) -> None:
        """Write the record as one JSON line."""
        for piece in self.iter_json_pieces():
            out.write(piece)
        out.write("\n")

    def to_record(self) -> dict[str, Any]:
        """The whole record as one value (holds every event: for small sessions and tests)."""
        record = self.head()
        record["chunks"] = [dict(chunk.descriptor(), events=chunk.events) for chunk in self.chunks]
        return record

    @classmethod
    def from_record(cls, obj: Mapping[str, Any]) -> PreparedSession:
        return _from_record(obj)


def prepare_session(
    source_id: str,
    snapshot: NativeSessionSnapshot | Mapping[str, Any],
    target_chunk_bytes: int = DEFAULT_TARGET_CHUNK_BYTES,
    driver: str | None = None,
    *,
    consume: bool = False,
) -> PreparedSession:
    """Key, captured values, chunks and hashes of one snapshot (nothing is published).

    With consume=True the snapshot's events list (the model's, or the mapping's own
    `events` list, not a validated copy of it) is emptied while it is prepared: each
    event is dropped once hashed and serialised, so a caller holding nothing else of the
    events never has the parsed events and the prepared text both whole in memory.
    """
    events: list[Any] | None = None
    if not isinstance(snapshot, NativeSessionSnapshot):
        raw_events = snapshot.get("events") if isinstance(snapshot, Mapping) else None
        if consume and type(raw_events) is list:
            events = raw_events  # validated below without the (large) events list
            snapshot = {k: v for k, v in snapshot.items() if k != "events"}
        snapshot = NativeSessionSnapshot.model_validate(snapshot)
    if events is None:
        events = snapshot.events
    source, session = normalize_key_parts(source_id, snapshot.summary.native_session_id)
    with gc_paused():  # captures and chunking make many containers and no cycles
        # one pydantic dump for the small views; events are captured one by one while chunking
        views = snapshot.model_dump(by_alias=True, include={"summary", "normalized_messages"})
        summary, summary_stream, _, summary_exact = capture_encoded(views["summary"])
        messages, messages_stream, _, messages_exact = capture_encoded(views["normalizedMessages"])
        del views  # the captures share its strings; its containers can go before chunking
        chunks = tuple(iter_chunks(_consumed(events) if consume else events, target_chunk_bytes))
    _after_walk(chunks)
    return PreparedSession(
        key=session_key(source, session),
        source_id=source,
        native_session_id=session,
        driver=driver,
        summary=summary,
        normalized_messages=messages,
        revision=snapshot.revision,
        complete=snapshot.complete,
        chunks=chunks,
        snapshot_hash=snapshot_hash(
            Encoded(summary_stream),  # hashed from capture's stream, not walked again
            Encoded(messages_stream),
            snapshot.revision,
            snapshot.complete,
            [c.descriptor() for c in chunks],
        ),
        exact_views=summary_exact and messages_exact,
        messages_stream=messages_stream,
    )


def _consumed(events: list[Any]) -> Iterator[Any]:
    """The events in order, each taken out of the list as it is handed on."""
    for index in range(len(events)):
        event = events[index]
        events[index] = None
        yield event
        del event
    events.clear()


def _after_walk(chunks: Iterable[EventChunk]) -> None:
    """After a large session, drop the string-encoding cache: its entries are that
    session's own small strings, scattered through the memory its parse used, and would
    keep much of that memory resident. Small sessions keep it warm for the next one.
    The session is also noted for lib.memory_release (its memory, once free, goes back)."""
    if sum(chunk.byte_length for chunk in chunks) > CACHE_RESET_BYTES:
        clear_string_cache()
        note_large_session()


def _field(obj: Mapping[str, Any], name: str, kinds: type | tuple[type, ...]) -> Any:
    value = obj.get(name)
    if not isinstance(value, kinds):
        raise PrepareError("invalid-prepared-record", f"prepared record field {name} is missing or has the wrong type")
    return value


def _read_chunk(key: str, part: int, raw: Any) -> EventChunk:
    if not isinstance(raw, Mapping) or raw.get("part") != part or not isinstance(raw.get("events"), list):
        raise PrepareError("invalid-prepared-record", f"prepared record {key} chunk {part} is malformed")
    chunk = build_chunk(part, raw["events"])
    stated = {name: raw.get(name) for name in ("part", "contentHash", "byteLength", "eventCount")}
    if stated != chunk.descriptor():
        raise PrepareError("hash-mismatch", f"prepared record {key} chunk {part} does not match its events")
    return chunk


def _from_record(obj: Mapping[str, Any]) -> PreparedSession:
    if not isinstance(obj, Mapping) or obj.get("record", RECORD) != RECORD:
        raise PrepareError("invalid-prepared-record", "not a prepared record")
    key = _field(obj, "key", str)
    source = _field(obj, "sourceId", str)
    session = _field(obj, "nativeSessionId", str)
    driver = _field(obj, "driver", (str, type(None)))
    revision = _field(obj, "revision", (str, type(None)))
    complete = _field(obj, "complete", bool)
    expected_hash = _field(obj, "snapshotHash", str)
    raw_summary = _field(obj, "summary", Mapping)
    raw_messages = _field(obj, "normalizedMessages", list)
    raw_chunks = _field(obj, "chunks", list)
    if session_key(source, session) != key:
        raise PrepareError("invalid-prepared-record", f"prepared record key does not match its identity: {key}")
    try:
        SessionSummary.model_validate(raw_summary)
        for message in raw_messages:
            NormalizedMessage.model_validate(message)
    except ValidationError as exc:
        raise PrepareError("invalid-prepared-record", f"prepared record {key} has an invalid view: {exc.errors()[0]['msg']}") from None
    if not raw_chunks:
        raise PrepareError("invalid-prepared-record", f"prepared record {key} has no chunks")
    with gc_paused():
        chunks = [_read_chunk(key, part, raw) for part, raw in enumerate(raw_chunks)]
    _after_walk(chunks)
    summary, summary_stream, _, summary_exact = capture_encoded(raw_summary)
    messages, messages_stream, _, messages_exact = capture_encoded(raw_messages)
    descriptors = [c.descriptor() for c in chunks]
    computed = snapshot_hash(Encoded(summary_stream), Encoded(messages_stream), revision, complete, descriptors)
    if computed != expected_hash:
        raise PrepareError("hash-mismatch", f"prepared record {key} snapshot hash does not match its content")
    return PreparedSession(
        key=key,
        source_id=source,
        native_session_id=session,
        driver=driver,
        summary=summary,
        normalized_messages=messages,
        revision=revision,
        complete=complete,
        chunks=tuple(chunks),
        snapshot_hash=expected_hash,
        exact_views=summary_exact and messages_exact,
        messages_stream=messages_stream,
    )

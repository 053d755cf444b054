"""Event chunks: provider events grouped into chunks of at most ~512 KiB of JSON.

Each event is hash-encoded and serialised once, compactly: exactly the text of
`json.dumps(event, ensure_ascii=False, separators=(",", ":"))` with keys in canonical
order (Python's float repr, non-ASCII as UTF-8). That text is both the measurement and
what a `prepared` record carries, so byte lengths describe exactly what is written. A
chunk's byte length is its JSON array: 2 brackets + its events + (n-1) commas, in UTF-8
bytes. Events stay whole; an event larger than the target sits alone in one oversized
chunk; a snapshot with no events gives part 0 with an empty array. Events must be plain
JSON (no UNDEFINED, holes, bytes, BigInt, links or non-finite numbers): ChunkError
otherwise.

A chunk's `contentHash` is the content hash of its events array (the value hash of the
tuple of events). The spec's "graph hash" would also cover the child cells' causes, but
those causes are derived deterministically from this content hash and the part, so
hashing the content the graph is built from identifies the graph just as well, and needs
no stable-array planning to compute. Each event's hash stream is fed into the chunk's
hasher as it is made (the array's stream is 0x10, the events' streams, 0x00) and then
dropped, so hashing costs O(event) extra memory.

The JSON text is orjson's wherever orjson writes the reference text: a plain JSON event
(the common case) is hash-encoded by lib._speedups.encode_json, which accepts only
values orjson writes exactly as json.dumps does (exact built-in types, no lone
surrogates, ints within 2**53, no float below 1e-4 in magnitude), then written by
orjson with sorted keys. Both are taken from the event before the next one is read, and
the chunk keeps only that immutable text, so nothing done to the event afterwards can
make them disagree. Any other event (or no C extension) takes the captured path
(lib.canonical): the captured copy is hashed and written, by orjson where capture
vouches for its numbers, else by json.dumps (whose text for a lone surrogate escapes
every non-ASCII character, since such a string has no UTF-8 form). Both paths give the
very same stream and text (tests/test_chunking.py compares them with json.dumps).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

import lib.hashing as _hashing
from lib.canonical import CaptureError, capture_encoded
from lib.errors import CodedError
from lib.hashing import Unsupported

__all__ = [
    "DEFAULT_TARGET_CHUNK_BYTES",
    "ChunkError",
    "EventChunk",
    "build_chunk",
    "iter_chunks",
    "chunk_events",
    "compact_json",
]

DEFAULT_TARGET_CHUNK_BYTES = 512 * 1024


class ChunkError(CodedError, ValueError):
    """An event that cannot be chunked. `code` is stable, `message` is for people."""



_SORT_KEYS = orjson.OPT_SORT_KEYS


def compact_json(value: Any, exact_numbers: bool = False) -> tuple[str, int]:
    """(compact JSON text with non-ASCII as UTF-8, its UTF-8 byte length): the text of
    json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False), keys in
    the value's own order."""
    raw, _ = _json_bytes(value, exact_numbers)
    return raw.decode("utf-8"), len(raw)


def _json_bytes(value: Any, exact_numbers: bool) -> tuple[bytes, bool]:
    """(compact_json's text as UTF-8, whether orjson wrote it).

    `exact_numbers` is the caller's promise (capture's `exact_numbers`) that every float is
    one orjson writes as json.dumps does; then orjson writes the text. Whatever orjson
    refuses (a lone surrogate, an int beyond 64 bits, a type it does not know) and every
    value without the promise goes to json.dumps. A lone surrogate has no UTF-8 form, so
    such a value keeps the all-escaped (ensure_ascii) text.
    """
    if exact_numbers:
        try:
            return orjson.dumps(value), True
        except TypeError:
            pass  # orjson.JSONEncodeError: json.dumps decides
    try:
        text = json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
        )
    except (TypeError, ValueError) as exc:
        raise ChunkError("unsupported-value", f"value has no plain JSON form: {exc}") from None
    try:
        return text.encode("utf-8"), False
    except UnicodeEncodeError:
        # a lone surrogate cannot be written as UTF-8: keep the all-escaped form
        text = json.dumps(value, separators=(",", ":"), allow_nan=False, check_circular=False)
        return text.encode("ascii"), False


@dataclass(frozen=True, slots=True)
class EventChunk:
    """One chunk: the JSON text of its events array and its descriptor fields.

    The chunk keeps the compact JSON text its events were measured as (what a record
    carries and publication writes), not the event objects: `events` parses that text
    again on each access, so a prepared 50 MB session holds its events once, as text, in
    a few large strings. Each access returns new values of the caller's own, equal to
    (and hashing as) the ones that were hashed: plain JSON round-trips exactly, and
    chunking refuses anything else. `orjson_text` says that orjson wrote every event (so
    orjson reads it back exactly: no lone surrogate, no int beyond 64 bits).
    """

    part: int
    event_count: int
    byte_length: int
    content_hash: str
    json_text: str
    orjson_text: bool = field(default=False, compare=False)

    @property
    def events(self) -> list[Any]:
        """The events (dicts and lists, keys in canonical order), parsed from the text."""
        if self.orjson_text:
            return orjson.loads(self.json_text)
        return json.loads(self.json_text)  # it reads big ints and escaped lone surrogates

    def descriptor(self) -> dict[str, Any]:
        """The chunk's structure without its events (what the snapshot hash covers)."""
        return {
            "part": self.part,
            "contentHash": self.content_hash,
            "byteLength": self.byte_length,
            "eventCount": self.event_count,
        }


def _measure(event: Any, index: int) -> tuple[bytes, bytes, bool]:
    """Hash-encode and serialise one event once: (its value-hash stream, its compact JSON
    as UTF-8, whether orjson wrote that text)."""
    fast = _hashing._c_encode_json
    if fast is not None:
        try:
            stream = fast(event)
        except Unsupported:
            pass  # not plain JSON through and through: the captured path decides
        else:
            return stream, orjson.dumps(event, option=_SORT_KEYS), True
    try:
        captured = capture_encoded(event)
    except CaptureError as exc:
        raise ChunkError(exc.code, f"event {index}: {exc.message}") from None
    if not captured.plain_json:
        raise ChunkError("unsupported-value", f"event {index} holds a value plain JSON cannot hold")
    try:
        raw, by_orjson = _json_bytes(captured.value, captured.exact_numbers)
    except ChunkError as exc:
        raise ChunkError(exc.code, f"event {index}: {exc.message}") from None
    return captured.stream, raw, by_orjson


class _Open:
    """A chunk being filled: its hasher is fed each event's stream as the event arrives,
    and only the event's UTF-8 JSON is kept until the chunk closes."""

    __slots__ = ("texts", "size", "hasher", "orjson_text")

    def __init__(self) -> None:
        self.texts: list[bytes] = []
        self.size = 2
        self.hasher = hashlib.sha256(b"\x10")
        self.orjson_text = True

    def fits(self, length: int, target: int) -> bool:
        return not self.texts or self.size + 1 + length <= target

    def add(self, stream: bytes, text: bytes, by_orjson: bool) -> None:
        if self.texts:
            self.size += 1
        self.size += len(text)
        self.texts.append(text)
        self.hasher.update(stream)
        self.orjson_text = self.orjson_text and by_orjson

    def close(self, part: int) -> EventChunk:
        self.hasher.update(b"\x00")
        count = len(self.texts)
        joined = b"[" + b",".join(self.texts) + b"]"
        self.texts.clear()
        return EventChunk(
            part=part,
            event_count=count,
            byte_length=self.size,
            content_hash="sha256:" + self.hasher.hexdigest(),
            json_text=joined.decode("utf-8"),
            orjson_text=self.orjson_text,
        )


def iter_chunks(events: Iterable[Any], target_bytes: int = DEFAULT_TARGET_CHUNK_BYTES) -> Iterator[EventChunk]:
    """Capture, measure and group events, yielding each chunk as soon as it is full."""
    if target_bytes < 1:
        raise ValueError("target chunk size must be positive")
    current = _Open()
    part = 0
    for index, event in enumerate(events):
        stream, text, by_orjson = _measure(event, index)
        del event  # a consumed snapshot frees each event here
        if not current.fits(len(text), target_bytes):
            yield current.close(part)
            part += 1
            current = _Open()
        current.add(stream, text, by_orjson)
    yield current.close(part)


def chunk_events(events: Iterable[Any], target_bytes: int = DEFAULT_TARGET_CHUNK_BYTES) -> list[EventChunk]:
    return list(iter_chunks(events, target_bytes))


def build_chunk(part: int, events: Iterable[Any]) -> EventChunk:
    """One chunk holding exactly these events (reading a prepared record back)."""
    current = _Open()
    for index, event in enumerate(events):
        current.add(*_measure(event, index))
    return current.close(part)

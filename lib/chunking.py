"""Event chunks: provider events grouped into chunks of at most ~512 KiB of JSON.

Each event is hash-encoded and serialised once, compactly: separators
"," and ":", non-ASCII written as UTF-8, keys in canonical order (Python's float repr
for non-integral numbers). That text is both the measurement and what a `prepared`
record carries, so byte lengths describe exactly what is written. A chunk's byte length
is its JSON array: 2 brackets + its events + (n-1) commas, in UTF-8 bytes. Events stay
whole; an event larger than the target sits alone in one oversized chunk; a snapshot
with no events gives part 0 with an empty array. Events must be plain JSON (no
UNDEFINED, holes, bytes, BigInt, links or non-finite numbers): ChunkError otherwise.

A chunk's `contentHash` is the content hash of its captured events array (the value hash
of the tuple of events). The spec's "graph hash" would also cover the child cells' causes,
but those causes are derived deterministically from this content hash and the part, so
hashing the content the graph is built from identifies the graph just as well, and needs
no stable-array planning to compute. Each event's hash stream is fed into the chunk's
hasher as it is made (the array's stream is 0x10, the events' streams, 0x00) and then
dropped, so hashing costs O(event) extra memory.

A plain JSON event (the common case) goes through lib._speedups.encode_json: one C walk
writes its hash stream and its compact JSON (keys in the same canonical order) side by
side, without a captured copy. Capture's guarantee still holds: the hash and the text
come from the same walk, and the chunk keeps only that immutable text, so nothing done
to the event afterwards can make them disagree. Any other event (or no C extension)
takes the captured path (lib.canonical), which gives the very same stream and text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import lib.hashing as _hashing
from lib.canonical import CaptureError, capture, capture_encoded
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



def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} has no plain JSON form")


def _encoder(ensure_ascii: bool) -> Any:
    # One reusable C encoder (no per-call JSONEncoder set-up, no cycle markers: captured
    # values cannot be cyclic); the pure-Python encoder where the C one is missing.
    c_make = getattr(json.encoder, "c_make_encoder", None)
    if c_make is not None:
        quote = json.encoder.c_encode_basestring_ascii if ensure_ascii else json.encoder.c_encode_basestring
        enc = c_make(None, _refuse, quote, None, ":", ",", False, False, False)
        return lambda v: "".join(enc(v, 0))
    py = json.JSONEncoder(
        separators=(",", ":"), ensure_ascii=ensure_ascii, check_circular=False, allow_nan=False, default=_refuse
    )
    return py.encode


_dump_ascii = _encoder(True)
_dump_utf8 = _encoder(False)


def compact_json(captured: Any, ascii_json: bool = False) -> tuple[str, int]:
    """(compact JSON text with non-ASCII as UTF-8, its UTF-8 byte length).

    `ascii_json` is capture's promise that no string holds a character >= U+007F; then
    the ASCII-escaping encoder (much faster in CPython) writes the very same text.
    """
    try:
        if ascii_json:
            text = _dump_ascii(captured)
            return text, len(text)
        text = _dump_utf8(captured)
    except (TypeError, ValueError) as exc:
        raise ChunkError("unsupported-value", f"value has no plain JSON form: {exc}") from None
    if text.isascii():
        return text, len(text)
    try:
        return text, len(text.encode("utf-8"))
    except UnicodeEncodeError:
        # a lone surrogate cannot be written as UTF-8: keep the all-escaped form
        text = _dump_ascii(captured)
        return text, len(text)


@dataclass(frozen=True, slots=True)
class EventChunk:
    """One chunk: the JSON text of its events array and its descriptor fields.

    The chunk keeps the compact JSON text its events were measured as (what a record
    carries and publication writes), not the captured objects: `events` rebuilds the
    captured values from that text on each access, so a prepared 50 MB session holds its
    events once, as text, in a few large strings. The rebuilt values equal the ones that
    were hashed: plain JSON round-trips exactly, and chunking refuses anything else.
    """

    part: int
    event_count: int
    byte_length: int
    content_hash: str
    json_text: str
    ascii_json: bool = False

    @property
    def events(self) -> tuple[Any, ...]:
        """The captured events (FrozenDicts and tuples), rebuilt from the chunk's text."""
        return capture(json.loads(self.json_text))

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
    as UTF-8, whether no string holds a character >= U+007F)."""
    fast = _hashing._c_encode_json
    if fast is not None:
        try:
            stream, text, wide = fast(event)
            return stream, text, not wide
        except Unsupported:
            pass  # not plain JSON through and through: the captured path decides
    try:
        captured = capture_encoded(event)
    except CaptureError as exc:
        raise ChunkError(exc.code, f"event {index}: {exc.message}") from None
    if not captured.plain_json:
        raise ChunkError("unsupported-value", f"event {index} holds a value plain JSON cannot hold")
    try:
        text, _ = compact_json(captured.value, captured.ascii_json)
    except ChunkError as exc:
        raise ChunkError(exc.code, f"event {index}: {exc.message}") from None
    # compact_json never returns a lone surrogate (it falls back to escaping them)
    return captured.stream, text.encode("utf-8"), captured.ascii_json


class _Open:
    """A chunk being filled: its hasher is fed each event's stream as the event arrives,
    and only the event's UTF-8 JSON is kept until the chunk closes."""

    __slots__ = ("texts", "size", "hasher", "ascii_json")

    def __init__(self) -> None:
        self.texts: list[bytes] = []
        self.size = 2
        self.hasher = hashlib.sha256(b"\x10")
        self.ascii_json = True

    def fits(self, length: int, target: int) -> bool:
        return not self.texts or self.size + 1 + length <= target

    def add(self, stream: bytes, text: bytes, ascii_json: bool) -> None:
        if self.texts:
            self.size += 1
        self.size += len(text)
        self.texts.append(text)
        self.hasher.update(stream)
        self.ascii_json = self.ascii_json and ascii_json

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
            ascii_json=self.ascii_json,
        )


def iter_chunks(events: Iterable[Any], target_bytes: int = DEFAULT_TARGET_CHUNK_BYTES) -> Iterator[EventChunk]:
    """Capture, measure and group events, yielding each chunk as soon as it is full."""
    if target_bytes < 1:
        raise ValueError("target chunk size must be positive")
    current = _Open()
    part = 0
    for index, event in enumerate(events):
        stream, text, ascii_json = _measure(event, index)
        del event  # a consumed snapshot frees each event here
        if not current.fits(len(text), target_bytes):
            yield current.close(part)
            part += 1
            current = _Open()
        current.add(stream, text, ascii_json)
    yield current.close(part)


def chunk_events(events: Iterable[Any], target_bytes: int = DEFAULT_TARGET_CHUNK_BYTES) -> list[EventChunk]:
    return list(iter_chunks(events, target_bytes))


def build_chunk(part: int, events: Iterable[Any]) -> EventChunk:
    """One chunk holding exactly these events (reading a prepared record back)."""
    current = _Open()
    for index, event in enumerate(events):
        current.add(*_measure(event, index))
    return current.close(part)

"""Event chunks: provider events grouped into chunks of at most ~512 KiB of JSON.

Each event is captured (lib.canonical) and serialised once, compactly: separators
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
hasher as it is captured and then dropped, so hashing costs O(event) extra memory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from lib.canonical import Captured, CaptureError, capture, capture_encoded

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


class ChunkError(ValueError):
    """An event that cannot be chunked. `code` is stable, `message` is for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


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


def _measure(event: Any, index: int) -> tuple[Captured, str, int]:
    """Capture one event and serialise it once: (capture, JSON text, UTF-8 length)."""
    try:
        captured = capture_encoded(event)
    except CaptureError as exc:
        raise ChunkError(exc.code, f"event {index}: {exc.message}") from None
    if not captured.plain_json:
        raise ChunkError("unsupported-value", f"event {index} holds a value plain JSON cannot hold")
    try:
        text, length = compact_json(captured.value, captured.ascii_json)
    except ChunkError as exc:
        raise ChunkError(exc.code, f"event {index}: {exc.message}") from None
    return captured, text, length


class _Open:
    """A chunk being filled: its hasher is fed each event's stream as the event arrives,
    and the captured event itself is dropped once hashed and serialised."""

    __slots__ = ("texts", "size", "hasher", "ascii_json")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.size = 2
        self.hasher = hashlib.sha256(b"\x10")
        self.ascii_json = True

    def fits(self, length: int, target: int) -> bool:
        return not self.texts or self.size + 1 + length <= target

    def add(self, captured: Captured, text: str, length: int) -> None:
        if self.texts:
            self.size += 1
        self.size += length
        self.texts.append(text)
        self.hasher.update(captured.stream)
        self.ascii_json = self.ascii_json and captured.ascii_json

    def close(self, part: int) -> EventChunk:
        self.hasher.update(b"\x00")
        return EventChunk(
            part=part,
            event_count=len(self.texts),
            byte_length=self.size,
            content_hash="sha256:" + self.hasher.hexdigest(),
            json_text="[" + ",".join(self.texts) + "]",
            ascii_json=self.ascii_json,
        )


def iter_chunks(events: Iterable[Any], target_bytes: int = DEFAULT_TARGET_CHUNK_BYTES) -> Iterator[EventChunk]:
    """Capture, measure and group events, yielding each chunk as soon as it is full."""
    if target_bytes < 1:
        raise ValueError("target chunk size must be positive")
    current = _Open()
    part = 0
    for index, event in enumerate(events):
        captured, text, length = _measure(event, index)
        if not current.fits(length, target_bytes):
            yield current.close(part)
            part += 1
            current = _Open()
        current.add(captured, text, length)
    yield current.close(part)


def chunk_events(events: Iterable[Any], target_bytes: int = DEFAULT_TARGET_CHUNK_BYTES) -> list[EventChunk]:
    return list(iter_chunks(events, target_bytes))


def build_chunk(part: int, events: Iterable[Any]) -> EventChunk:
    """One chunk holding exactly these events (reading a prepared record back)."""
    current = _Open()
    for index, event in enumerate(events):
        current.add(*_measure(event, index))
    return current.close(part)

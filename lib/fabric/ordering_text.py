"""The ordering cell's fvj1 text, read into and written from its table, no object a session.

Its `sessions` object is every session's key and sequence (1.2 MB of text at 25,000
sessions). Decoded whole it was a dict of 25,000 first (a key string and an int object
each), and written whole it was that dict again, encoded. Here:

- `text_of` writes the text from the table in key order, each entry's bytes from the
  key buffer (ordering_table.py), into one buffer (`text_pieces`: in pieces, for a
  store that keeps it compressed as they come, index_store.py): byte for byte what
  `values.dumps(state.to_value(owner))` writes (orjson: a key's characters as they
  are, but `"`, `\\` and control characters escaped). A table whose text values.dumps
  would write another way (a key starting with "/" escapes the whole object, a lone
  surrogate makes the whole text json.dumps's, a sequence beyond 2**53 is tagged) is
  written by values.dumps itself.
- `read_entries` reads a text of the shape `text_of` writes entry by entry into the
  table; any other text (another writer's, an older version's) is decoded whole, as
  before, and read by `OrderingState.from_value` (`OrderingState.from_text`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from lib.fabric import value_decoding, values
from lib.fabric.ordering_table import Buffers, SessionSequences

if TYPE_CHECKING:
    from lib.fabric.ordering import OrderingState

SESSIONS = "sessions"
_OPEN = '"' + SESSIONS + '":{'
_ESCAPED = re.compile(rb'["\\\x00-\x1f]')  # what orjson writes escaped in a string
# one entry: a key without control characters (their text is not JSON), a sequence of
# at most 18 digits (below 2**63: a table's int), then "," or the object's end
_CHARS = r'[^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*'  # a string's characters (a loop unrolled: no alternation a character)
_ENTRY = re.compile('"(' + _CHARS + ')":([1-9][0-9]{0,17})([,}])')
_STRING = re.compile('"' + _CHARS + '"')


def text_of(state: OrderingState, owner_did: str) -> str:
    """`values.dumps(state.to_value(owner_did))`, written from the table."""
    out = bytearray()
    for piece in text_pieces(state, owner_did):
        out += piece
    return out.decode("utf-8")


PIECE_BYTES = 1 << 16  # a piece of the text, at least (the last may be shorter)


def text_pieces(state: OrderingState, owner_did: str) -> Iterator[bytes]:
    """`text_of`'s UTF-8 in pieces of about PIECE_BYTES, made as they are taken (a
    store keeps it compressed as they come: Store.stored_form_of_pieces)."""
    sessions = state.sessions
    keys = sessions.keys_table
    if not keys.plain or sessions.largest() > values._MAX_SAFE:
        yield values.dumps(state.to_value(owner_did)).encode("utf-8")
        return
    frame = state.to_value(owner_did, sessions={})
    try:  # what values.dumps does, in parts (as row_cells.root_text does)
        head = orjson.dumps(values.encode(frame))
    except TypeError:  # orjson refused a part: values.dumps writes the whole another way
        yield values.dumps(state.to_value(owner_did)).encode("utf-8")
        return
    cut = head.index(b'"' + SESSIONS.encode() + b'":{}') + len(_OPEN)
    out = bytearray(head[:cut])
    seq_at, piece, search = sessions.sequence_at, keys.piece, _ESCAPED.search
    escaped = any(search(text) is not None for text in keys.texts())
    entry = b'"%b":%d,'
    for at in sessions.in_key_order():
        text, start, end = piece(at)
        if escaped and search(text, start, end):
            out += b"%b:%d," % (orjson.dumps(keys.key(at)), seq_at(at))
        else:
            out += entry % (text[start:end], seq_at(at))
        if len(out) >= PIECE_BYTES:
            yield out[:-1]  # its last comma goes with the next piece: the last entry has none
            out = bytearray(b",")
    if out.endswith(b","):
        del out[-1]  # the last entry's comma
    out += head[cut:]
    yield out


def read_entries(
    text: str, schema: str, shared: Buffers | None = None
) -> tuple[SessionSequences, dict[str, Any]] | None:
    """The sessions of a text shaped as `text_of` writes it, and its other fields; None
    for any other text. `shared`: the prior table's keys, which the sessions' table uses."""
    return read_pieces([text], schema, shared)


def read_pieces(
    pieces: Iterable[str], schema: str, shared: Buffers | None = None
) -> tuple[SessionSequences, dict[str, Any]] | None:
    """`read_entries` of the text `pieces` make, read as they come: its entries scanned a
    piece at a time, the text never whole (the store inflates it in pieces:
    stored_values.decode_pieces; its 1.2 MB and its UTF-8 at 25,000 sessions were the
    listing idle sync's peak, issue 14 goal 4)."""
    pieces = iter(pieces)
    head = '{"schema":' + json.dumps(schema) + ',"ownerDid":'
    text = _filled("", pieces, len(head))
    if not text.startswith(head):
        return None
    owner = _STRING.match(text, len(head))
    while owner is None or len(text) < owner.end() + 1 + len(_OPEN):  # the owner's string cut
        more = next(pieces, None)
        if more is None:
            break
        text += more
        owner = _STRING.match(text, len(head))
    if owner is None or not text.startswith("," + _OPEN, owner.end()):
        return None
    opening = text[: owner.end()]
    sessions = SessionSequences(shared=shared)
    rest: list[str] = []  # the text after the sessions' object (none: another shape)
    sessions.load(_entries(text, owner.end() + 1 + len(_OPEN), pieces, rest))
    if not rest:
        return None
    try:
        other = value_decoding.loads(opening + rest[0])
    except values.ValueEncodingError:
        return None
    if type(other) is not dict or SESSIONS in other:  # a second "sessions" would be the one read
        return None
    return sessions, other


def _filled(text: str, pieces: Iterator[str], length: int) -> str:
    """`text` with pieces added until it has `length` characters or they end."""
    while len(text) < length:
        more = next(pieces, None)
        if more is None:
            break
        text += more
    return text


def _entries(text: str, at: int, pieces: Iterator[str], rest: list[str]) -> Iterator[tuple[str, int]]:
    """The entries of the `sessions` object opening at `at`, `text` taking the next piece
    where an entry does not match whole; the text after the object goes to `rest` (with
    the pieces left), nothing at anything `text_of` does not write."""
    match = _ENTRY.match
    text, at = _filled(text[at:], pieces, 1), 0
    if text.startswith("}"):
        rest.append(text[1:] + "".join(pieces))
        return
    while True:
        entry = match(text, at)
        if entry is None:  # cut by the piece's end, or another shape
            more = next(pieces, None)
            if more is None:
                return
            text, at = text[at:] + more, 0
            continue
        key = entry.group(1)
        if "\\" in key:
            try:
                key = json.loads('"' + key + '"')
            except ValueError:
                return
        yield key, int(entry.group(2))
        at = entry.end()
        if entry.group(3) == "}":
            rest.append(text[at:] + "".join(pieces))
            return

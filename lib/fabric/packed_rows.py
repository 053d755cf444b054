"""An index row a publication holds, packed into one block kept on disk (issue 14 goal 4).

A publication holds a row per session from when it observes the session (or reads the
prior index) until its commit: 25,000 of them for a large collection. As plain dicts
each one kept a dict, a string per field, its capabilities dict and its manifest link
alive (about 2.8 KB of small objects), and those long-lived small objects pinned the
allocator arenas that every session's short-lived objects had shared: the peak grew
about 6 KB per session. A `PackedRow` keeps the row's fields as one block (JSON by
orjson, links tagged; pickle for what JSON cannot hold exactly) appended to an unlinked
private temporary file, its previews as the lazy stand-in they already were
(packed_previews.py), and in memory only what every rule reads of every row: the key,
the status and sourceId (shared between rows), and the gitWorktreeRoot the commit reads
of every live row for the checkout rows. The order fields (updatedAt, createdAt) are
read from the block when the index is ordered (session 23: two strings a row, and their
entries in the interned table, were most of what a held row kept in memory).

It is a read-only Mapping with the row's exact fields in their order: the rules read it
as a dict, `plain()` / `dict(row)` give the plain row back (its previews still the
stand-in), and a block is read and decoded at most once for several reads of one row
(the last two decoded are kept). Its value hash is the plain row's (`__fabric_json__`).
A container read back from JSON is a list where the row held a tuple (the same Fabric
value).
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from lib.fabric.packed_previews import FIELD as PREVIEWS
from lib.fabric.packed_previews import PackedPreviews, StoredPreviews, same_previews
from lib.fabric.values import Link

_LINK = "\x00link"  # a link's tag in the JSON block (no Fabric value starts a key with NUL)
_JSON, _PICKLE = b"j", b"p"
NO_PREVIEWS = _NO_PREVIEWS = object()  # a row without the field
ABSENT = _ABSENT = object()  # a held field the row does not have
# the fields every rule reads of every row, held beside the block (the commit reads
# every live row's gitWorktreeRoot for the checkout rows: held, no block is decoded)
_HELD = {"key": "key", "status": "status", "sourceId": "source_id", "gitWorktreeRoot": "worktree"}
_MAX_INT = 2**63


class PackedRow(Mapping[str, Any]):
    __slots__ = ("key", "status", "source_id", "worktree", "_file", "_at", "_previews")

    key: str
    status: Any  # each held field's value, or _ABSENT
    source_id: Any
    worktree: Any

    def __init__(self, row: Mapping[str, Any]) -> None:
        fields = dict(row)
        previews = fields.get(PREVIEWS, _NO_PREVIEWS)
        if previews is not _NO_PREVIEWS:
            if isinstance(previews, list | tuple):
                previews = PackedPreviews(previews)
            fields[PREVIEWS] = None  # its place in the field order; the stand-in is held apart
        self._previews = previews
        self._file, self._at = _store(_pack(fields))
        # interned: a session's prior row and its new one share these strings
        self.key = _shared(fields["key"])
        self.status = _shared(fields.get("status", _ABSENT))
        self.source_id = _shared(fields.get("sourceId", _ABSENT))
        self.worktree = _shared(fields.get("gitWorktreeRoot", _ABSENT))

    def stored_previews(self) -> StoredPreviews | None:
        """Its previews when they are still in a stored row's cell (StoredPreviews)."""
        previews = self._stand_in()
        return previews if type(previews) is StoredPreviews else None

    def with_previews(self, previews: Any) -> PackedRow:
        """This row with other previews (the same fields: the block is shared)."""
        out = object.__new__(PackedRow)
        for name in PackedRow.__slots__:
            object.__setattr__(out, name, getattr(self, name))
        out._previews = previews
        return out

    # -- Mapping ----------------------------------------------------------------------

    def __getitem__(self, name: str) -> Any:
        held = _HELD.get(name)
        if held is not None:
            value = getattr(self, held)
            if value is _ABSENT:
                raise KeyError(name)
            return value
        if name == PREVIEWS:
            previews = self._stand_in()
            if previews is not _NO_PREVIEWS:
                return previews
        return self._fields()[name]

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        return name in self._fields()

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields())

    def __len__(self) -> int:
        return len(self._fields())

    def plain(self) -> dict[str, Any]:
        """The row as a dict (its previews still whatever stand-in they are)."""
        out = dict(self._fields())
        previews = self._stand_in()
        if previews is not _NO_PREVIEWS:
            out[PREVIEWS] = previews
        return out

    def fields(self) -> Mapping[str, Any]:
        """Its fields as decoded, read-only (shared), without its previews' stand-in."""
        return self._fields()

    def __fabric_json__(self) -> dict[str, Any]:
        return self.plain()

    def same_as(self, other: PackedRow) -> bool | None:
        """True when both hold the same packed fields and known-equal previews; None when
        only their values can tell (JSON blocks of equal fields are equal bytes)."""
        if self._file is other._file and self._at == other._at:
            same = True  # one block (with_previews), or one row of a prior table
        else:
            mine = self._bytes()
            same = mine[:1] == _JSON and mine == other._bytes()
        if same:
            previews, others = self._stand_in(), other._stand_in()
            if previews is others or same_previews(previews, others):
                return True
        return None

    # -- where its parts are (prior_table.TableRow keeps them in its table) ------------

    def _fields(self) -> dict[str, Any]:
        return _fields(self._file, self._at)

    def _bytes(self) -> bytes:
        return _block(self._file, self._at)

    def _stand_in(self) -> Any:
        return self._previews

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedRow):
            return self.same_as(other) is True or self.plain() == other.plain()
        if isinstance(other, Mapping):
            return self.plain() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PackedRow({self.plain()!r})"


def pack_block(row: Mapping[str, Any]) -> bytes:
    """The block a PackedRow of `row` keeps (its fields; previews excluded by the caller)."""
    return _pack(dict(row))


def decoded_block(spill: BlockFile, at: int) -> dict[str, Any]:
    """The fields of the block at `at` of `spill` (read-only; the last two decoded kept)."""
    return _fields(spill, at)


def block_bytes(spill: BlockFile, at: int) -> bytes:
    return _block(spill, at)


def held(value: Any) -> Any:
    """A held field's value as a PackedRow holds it (a string interned)."""
    return _shared(value)


def packed(row: Mapping[str, Any]) -> PackedRow:
    """`row` packed (itself when it is packed already)."""
    return row if isinstance(row, PackedRow) else PackedRow(row)


def plain_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row as a dict a rule may change (a copy)."""
    return row.plain() if isinstance(row, PackedRow) else dict(row)


# -- the block ----------------------------------------------------------------------


def _shared(value: Any) -> Any:
    """A string field as one object wherever it is equal (sys.intern)."""
    return sys.intern(value) if type(value) is str else value


def _pack(fields: dict[str, Any]) -> bytes:
    """JSON when reading it back gives equal values of the same types, else pickle."""
    out: dict[str, Any] = {}
    for k, v in fields.items():
        t = type(v)
        if t is str or v is None or t is bool or (t is int and -_MAX_INT <= v < _MAX_INT):
            out[k] = v
        elif t is Link:
            out[k] = _tagged(v)
        elif (t is dict or t is list) and _exact_container(v):
            out[k] = v
        else:
            return _PICKLE + pickle.dumps(fields, protocol=pickle.HIGHEST_PROTOCOL)
    return _JSON + orjson.dumps(out)


# Verdicts on containers by their JSON text: a source's capabilities (the same in every
# row) are walked once. Text holding `null` is walked each time (NaN is written as null).
_EXACT: dict[bytes, bool] = {}


def _exact_container(value: dict[str, Any] | list[Any]) -> bool:
    try:
        text = orjson.dumps(value)
    except TypeError:
        return False
    verdict = _EXACT.get(text)
    if verdict is None:
        verdict = _json_exact(value, top=False)
        if b"null" not in text and len(_EXACT) < 64:
            _EXACT[text] = verdict
    return verdict


def _tagged(link: Link) -> dict[str, Any]:
    return {_LINK: [link.id, link.space, list(link.path)]}


def _json_exact(value: Any, top: bool = True) -> bool:
    """Whether orjson writes `value` so that reading it back gives an equal value of the
    same types (a link only as a row's own field: only those are tagged)."""
    t = type(value)
    if t is str or t is bool or value is None:
        return True
    if t is int:
        return -_MAX_INT <= value < _MAX_INT
    if t is float:
        return value == value and value not in (float("inf"), float("-inf"))
    if t is Link:
        return top
    if t is dict:
        return all(type(k) is str and not k.startswith("\x00") and _json_exact(v, False) for k, v in value.items())
    if t is list:
        return all(_json_exact(v, False) for v in value)
    return False  # tuples (read back as lists), anything else


class BlockFile:
    """Row blocks appended to an unlinked private temporary file (0600); closed when no
    row refers to it any more (each row holds its file), or when the process ends."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="agentctl-rows-", buffering=0)
        self.end = 0
        self.pid = os.getpid()  # a forked child appends to a file of its own
        self._lock = threading.Lock()

    def append(self, block: bytes) -> int:
        with self._lock:
            offset = self.end
            os.pwrite(self._file.fileno(), block, offset)
            self.end += len(block)
        return offset

    def read(self, offset: int, length: int) -> bytes:
        return os.pread(self._file.fileno(), length, offset)


# Rows of every publication in this process share a file until it holds ROTATE_BYTES;
# then new rows go to a new one (an old one closes once its last row is gone).
ROTATE_BYTES = 64 << 20
_LENGTH = 1 << 24  # a block's place in its file: offset * _LENGTH + length
_current: BlockFile | None = None
_current_lock = threading.Lock()


def _store(block: bytes) -> tuple[BlockFile | None, Any]:
    """Where `block` is kept: (its file, offset * _LENGTH + length); a block too large
    for that is kept in memory, (None, block)."""
    global _current
    if len(block) >= _LENGTH:
        return None, block
    with _current_lock:
        if _current is None or _current.end >= ROTATE_BYTES or _current.pid != os.getpid():
            _current = BlockFile()
        spill = _current
    return spill, spill.append(block) * _LENGTH + len(block)


def block_ref(spill: BlockFile, block: bytes) -> int | None:
    """`block` appended to `spill`: its place there, or None when it is too large for
    one (kept in memory by the caller, as `_store` keeps it)."""
    if len(block) >= _LENGTH:
        return None
    return spill.append(block) * _LENGTH + len(block)


def _block(spill: BlockFile | None, at: Any) -> bytes:
    if spill is None:
        return at
    return spill.read(at // _LENGTH, at % _LENGTH)


# the last two rows decoded, newest first: a rule reads several fields of one row in a
# row, and sync judges the next session (read-ahead) between two reads of this one
_recent: list[tuple[Any, Any, dict[str, Any]]] = [(None, None, {}), (None, None, {})]


def _fields(spill: BlockFile | None, at: Any) -> dict[str, Any]:
    """The row's fields, read-only (shared between calls)."""
    newest, older = _recent
    if newest[0] is spill and newest[1] == at:
        return newest[2]
    if older[0] is spill and older[1] == at:
        _recent[0], _recent[1] = older, newest
        return older[2]
    block = _block(spill, at)
    if block[:1] == _JSON:
        fields = orjson.loads(memoryview(block)[1:])
        for k, v in fields.items():
            if type(v) is dict and len(v) == 1 and _LINK in v:
                link_id, space, path = v[_LINK]
                fields[k] = Link(link_id, space, tuple(path)) if path else Link.trusted(link_id, space)
    else:
        fields = pickle.loads(memoryview(block)[1:])
    _recent[0], _recent[1] = (spill, at, fields), newest
    return fields

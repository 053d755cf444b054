"""A row's message previews kept out of memory while a publication runs (issue 14).

A session row keeps its last twelve normalized messages (`recentMessages`), most of
its size: held as plain dicts, a publication of 25,000 sessions kept about 15 KB per
row alive (and with them the snapshot's strings). While a publication holds a row, its
previews are one of these stand-ins instead, each giving back the exact list on
`unpack()`:

- `PreviewCells`: a new row's previews as the cells they become (each one's identity
  encoding and fvj1 text, preview_cells.py), appended uncompressed to the publication's
  `PreviewSpill` (an unlinked private temporary file): the commit writes those texts
  as they are (row_cells.py), without decoding and planning the previews again;
- `SpilledPreviews`: a new row's previews the planner must plan (preview_cells.py says
  which), zlib-compressed fvj1 text appended to the same spill;
- `StoredPreviews`: a prior row's previews, still in the store: read again from the
  row's cell when the row must be planned anew (its status changed);
- `PackedPreviews`: compressed in memory (no spill at hand).

The other row fields stay plain, so every rule that decides a row's fate reads it as
before. The planner never sees a stand-in (`unpacked_row` first); a value hash of a row
holding one is that of the plain row (`__fabric_json__`, which lib.hashing and
lib.fabric.values honour).
"""

from __future__ import annotations

import marshal
import os
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import IO, Any

from isal import isal_zlib

from lib.fabric import value_decoding, values
from lib.fabric.preview_cells import preview_cells
from lib.fabric.store import Store

FIELD = "recentMessages"
BUFFER = 256 * 1024  # bytes of spilled previews written to the spill file at a time


def _pack(messages: Sequence[Any]) -> bytes:
    return isal_zlib.compress(values.dumps(list(messages)).encode("utf-8"), 1)


def _unpack(packed: bytes) -> list[Any]:
    return value_decoding.loads(isal_zlib.decompress(packed))


class LazyPreviews(ABC):
    """A row's previews held elsewhere; `unpack()` gives the exact list back."""

    __slots__ = ()

    @abstractmethod
    def unpack(self) -> list[Any]: ...

    def __fabric_json__(self) -> list[Any]:
        return self.unpack()

    def __len__(self) -> int:
        return len(self.unpack())


class PackedPreviews(LazyPreviews):
    __slots__ = ("_packed",)

    def __init__(self, messages: Sequence[Any]) -> None:
        self._packed = _pack(messages)

    def unpack(self) -> list[Any]:
        return _unpack(self._packed)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedPreviews):
            return self._packed == other._packed
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._packed)


class PreviewSpill:
    """Append-only packed previews in an unlinked temporary file (0600, gone when
    closed or when the process ends)."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._end = 0
        self._lock = threading.Lock()

    def spill(self, messages: Sequence[Any]) -> PreviewCells | SpilledPreviews:
        cells = preview_cells(messages)
        if cells is not None:  # marshal: (bytes, str) lists, read back only by this process
            return PreviewCells(self, *self._append(marshal.dumps(cells)))
        return SpilledPreviews(self, *self._append(_pack(messages)))

    def _append(self, packed: bytes) -> tuple[int, int]:
        with self._lock:
            if self._file is None:
                # appended to only (`read` uses pread, which leaves the position at the
                # end), through a buffer of many rows: not a write() call per row
                self._file = tempfile.TemporaryFile(prefix="agentctl-previews-", buffering=BUFFER)
            offset = self._end
            self._file.write(packed)
            self._end += len(packed)
        return offset, len(packed)

    def read(self, offset: int, length: int) -> bytes:
        with self._lock:
            if self._file is None:
                raise ValueError("the preview spill is closed")
            self._file.flush()
            return os.pread(self._file.fileno(), length, offset)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class SpilledPreviews(LazyPreviews):
    __slots__ = ("_spill", "_offset", "_length")

    def __init__(self, spill: PreviewSpill, offset: int, length: int) -> None:
        self._spill, self._offset, self._length = spill, offset, length

    def unpack(self) -> list[Any]:
        return _unpack(self._spill.read(self._offset, self._length))


class PreviewCells(LazyPreviews):
    """Previews spilled as their cells' identity encodings and fvj1 texts."""

    __slots__ = ("_spill", "_offset", "_length")

    def __init__(self, spill: PreviewSpill, offset: int, length: int) -> None:
        self._spill, self._offset, self._length = spill, offset, length

    def cells(self) -> tuple[list[bytes], list[str]]:
        """(each preview's identity encoding, each one's fvj1 text)."""
        return marshal.loads(self._spill.read(self._offset, self._length))

    def unpack(self) -> list[Any]:
        return [value_decoding.loads(text) for text in self.cells()[1]]


class StoredPreviews(LazyPreviews):
    """The previews of the row stored in `cell` (a prior index row's cell)."""

    __slots__ = ("_store", "_space", "_cell")

    def __init__(self, store: Store, space: str, cell: str) -> None:
        self._store, self._space, self._cell = store, space, cell

    @property
    def space(self) -> str:
        return self._space

    @property
    def cell(self) -> str:
        """The row cell (prior_rows.RowLinks links it from here)."""
        return self._cell

    @property
    def store(self) -> Store:
        return self._store

    def unpack(self) -> list[Any]:
        from lib.fabric.graph_read import read_graph_value

        row = read_graph_value(self._store, self._space, self._cell, preserve_link_fields={"manifest"})
        previews = row.get(FIELD) if isinstance(row, dict) else None
        return list(previews) if isinstance(previews, list) else []

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredPreviews):
            return (self._store, self._space, self._cell) == (other._store, other._space, other._cell)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._space, self._cell))


def packed_row(row: dict[str, Any], spill: PreviewSpill | None = None) -> dict[str, Any]:
    """`row` itself with its previews (a list) spilled, or packed in memory."""
    previews = row.get(FIELD)
    if isinstance(previews, list | tuple):
        row[FIELD] = spill.spill(previews) if spill is not None else PackedPreviews(previews)
    return row


def spilled_bytes(previews: Any) -> int:
    """Bytes a row's previews take in the spill (what reading them back stages), else 0."""
    if type(previews) is PreviewCells or type(previews) is SpilledPreviews:
        return previews._length
    return 0


def unpacked_row(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The plain row (a copy when its previews were a stand-in or it is not a dict, a
    packed row (packed_rows.py), else `row` itself)."""
    previews = row.get(FIELD)
    if isinstance(previews, LazyPreviews):
        return {**row, FIELD: previews.unpack()}
    return row if type(row) is dict else dict(row)


def same_previews(a: Any, b: Any) -> bool | None:
    """True when two rows' previews are known equal without unpacking (one stand-in, or
    packed from the same text); None when only their values can tell."""
    if a is b:
        return True
    if type(a) in (PackedPreviews, StoredPreviews) and a == b:  # the same text, or the same cell
        return True
    return None

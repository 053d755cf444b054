"""The prior complete index's rows, held as one table, not an object per row (issue 14 goal 4).

A publication reads every prior row when it opens and holds them until its commit. As a
`PackedRow` each (its object, its block's offset, its `StoredPreviews` and the row cell's
ID held as a string), 25,000 rows held about 9 MB from the opening to the commit, the
listing idle sync's growth from 3,000 to 25,000 threads (docs/store-size-and-speed.md,
"Session 26: memory before the publication opens"). `PriorRows` keeps per row only:

- its block in the table's own file (packed_rows.py: the same block a PackedRow keeps)
  and the block's place there (8 bytes);
- its key's UTF-8 bytes in one buffer (no string a row: the key strings, allocated as
  each batch was decoded and kept, pinned the allocator's arenas the batch's other
  objects had shared, so RSS stayed as high as when every row was held); a row found
  by its key holds that string, one made otherwise a string of its own (interning them
  grew the interned strings' table by 1.9 MB at 25,000 rows, kept at the commit's peak,
  once the ordering held no key strings to share: ordering_table.py);
- its status, sourceId and gitWorktreeRoot as indices into the few distinct values;
- its cell's ID, 43 bytes, when it is a short link into the space (what commit_indexes
  writes), in a private temporary file (cell_column.py, session 30); rows of another
  shape keep their link or previews in a dict;
- its key's hash (8 bytes), and its place in an open-addressed table of rows by that
  hash (4 bytes a slot, at most half the slots filled) for look-ups by key.

Each row is made when asked (`TableRow`, a PackedRow whose parts are the table's), so
the rules read it as they read any packed row. The prior's table is read-only once read.

A publication's touches (touch_table.py) are the same table, filled as sessions are
observed (issue 14 goal 4: a first sync held a `PackedRow`, its key string, its block's
offset, its previews' stand-in and two dict entries a session until the commit): kept
indexed as it grows (`put`, `entry`), a key touched again has its entry replaced (its
new block appended), no cell IDs kept (`cells=False`), and a row's previews spilled to
the publication's `PreviewSpill` kept as their place there (12 bytes), the stand-in
made when the row is.
"""

from __future__ import annotations

from array import array
from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Any

from lib.fabric.cell_column import CellColumn
from lib.fabric.packed_previews import FIELD as PREVIEWS
from lib.fabric.packed_previews import (
    PackedPreviews,
    PreviewCells,
    PreviewSpill,
    SpilledPreviews,
    StoredPreviews,
)
from lib.fabric.packed_rows import (
    ABSENT,
    NO_PREVIEWS,
    BlockFile,
    PackedRow,
    block_bytes,
    block_ref,
    decoded_block,
    held,
    pack_block,
)
from lib.fabric.root_links import ID_BODY, ID_PREFIX, id_body
from lib.fabric.values import Link
from lib.key_table import KeyTable

_NO_CELL = b"\x00" * ID_BODY
_HAS_CELL, _STORED_PREVIEWS, _PREVIEW_CELLS, _SPILLED_PREVIEWS = 1, 2, 4, 8  # a row's flags
_SPILLED = {PreviewCells: _PREVIEW_CELLS, SpilledPreviews: _SPILLED_PREVIEWS}


class PriorRows(KeyTable, Mapping[str, PackedRow]):
    """The prior rows by key, in the index's order (`add`, then read-only); its keys are a
    KeyTable (lib/key_table.py)."""

    def __init__(self, store: Any, space: str, *, cells: bool = True, previews: PreviewSpill | None = None) -> None:
        super().__init__()
        self._store, self._space = store, space
        self._with_cells = cells  # False: no row has a cell (a publication's touches)
        self._spill = previews  # the PreviewSpill whose stand-ins are kept as their place
        self._preview_offsets = array("Q")  # a row's spilled previews (only with `previews`)
        self._preview_lengths = array("I")
        self._blocks = BlockFile() if previews is None else _SpillBlocks(previews)
        self._refs = array("q")  # -1 - n: the n-th block too large for the file (`_large`)
        self._large: list[bytes] = []
        self._held = array("I")  # status, sourceId, gitWorktreeRoot: three indices a row
        self._values: list[Any] = []
        self._value_at: dict[tuple[type, Any], int] = {}
        self._cells = CellColumn()  # each row's cell ID without its prefix, or _NO_CELL (in a file)
        self._flags = bytearray()
        self._other: dict[int, Any] = {}  # a cell of another form, a link of another space, previews

    # -- reading ---------------------------------------------------------------------------

    def add(self, row: Mapping[str, Any], link: Any, stored_previews: bool) -> int:
        """One row, its `link` (the root's link to its cell) and whether its previews are
        still in that cell (StoredPreviews), in the index's order; its place."""
        at = self.entry(row["key"], append=True)
        self._fill(at, row, link, stored_previews)
        return at

    def put(self, row: Mapping[str, Any]) -> int:
        """`row` as its key's row (no cell): a new entry, or the key's entry replaced (its
        new block appended); its place."""
        at = self.entry(row["key"])
        self._fill(at, row, None, False)
        return at

    def entry(self, key: str, *, append: bool = False) -> int:
        """The place of `key`'s entry, appended (no row yet: its block is read only once
        `put`) when there is none or `append`."""
        at = None if append else self.position(key)
        if at is not None:
            return at
        at = self.append(key)  # kept indexed as it grows once looked up (a table filled and read at once)
        self._refs.append(0)
        self._held.extend((self._value(ABSENT),) * 3)
        self._flags.append(0)
        if self._with_cells:
            self._cells.append(_NO_CELL)
        if self._spill is not None:
            self._preview_offsets.append(0)
            self._preview_lengths.append(0)
        return at

    def _fill(self, at: int, row: Mapping[str, Any], link: Any, stored_previews: bool) -> None:
        fields = dict(row)
        previews = fields.get(PREVIEWS, NO_PREVIEWS)
        if previews is not NO_PREVIEWS:
            fields[PREVIEWS] = None  # its place in the field order, as PackedRow keeps it
        block = pack_block(fields)
        ref = block_ref(self._blocks, block)
        if ref is None:
            self._large.append(block)
            ref = -len(self._large)
        self._refs[at] = ref
        for n, name in enumerate(("status", "sourceId", "gitWorktreeRoot")):
            self._held[3 * at + n] = self._value(fields.get(name, ABSENT))
        self._other.pop(at, None)
        self._other.pop(~at, None)
        flags = 0
        if self._with_cells and type(link) is Link and link.space == self._space and not link.path:
            flags |= _HAS_CELL
            body = id_body(link.id)
            if body is not None:
                self._cells.set(at, body)
            else:
                self._other[at] = link.id
        elif type(link) is Link:
            self._other[at] = link
        spilled = _SPILLED.get(type(previews), 0) if self._spill is not None else 0
        if stored_previews and flags & _HAS_CELL:
            flags |= _STORED_PREVIEWS
        elif spilled and previews._spill is self._spill and previews._length < 1 << 32:
            flags |= spilled
            self._preview_offsets[at], self._preview_lengths[at] = previews._offset, previews._length
        elif previews is not NO_PREVIEWS:
            self._other[~at] = PackedPreviews(previews) if isinstance(previews, list | tuple) else previews
        self._flags[at] = flags

    def duplicate(self) -> int | None:
        """Where a key appears again (the later row), after indexing every key; None when
        each key appears once."""
        return self.index()

    def _value(self, value: Any) -> int:
        try:
            named = (type(value), value)
            at = self._value_at.get(named)
        except TypeError:  # unhashable: a value of its own
            named, at = None, None
        if at is None:
            at = len(self._values)
            self._values.append(held(value))
            if named is not None:
                self._value_at[named] = at
        return at

    # -- a row -----------------------------------------------------------------------------

    def key(self, at: int) -> str:
        """Row `at`'s key (made now; not interned: the ordering keeps no key strings,
        it reads this table's keys where they are, `key_buffers`)."""
        return self.text(at)

    def owns(self, row: Any) -> bool:
        """Whether `row` is one of this table's own (its place is `row._at`)."""
        return type(row) is TableRow and row._file is self

    def row(self, at: int, key: str | None = None) -> TableRow:
        """Row `at`; `key`: its key's string, when the caller has it (found by it)."""
        row = object.__new__(TableRow)
        values, first = self._values, 3 * at
        row.key = self.key(at) if key is None else key
        row.status = values[self._held[first]]
        row.source_id = values[self._held[first + 1]]
        row.worktree = values[self._held[first + 2]]
        row._file, row._at, row._previews = self, at, None
        return row

    def status(self, at: int) -> Any:
        """Row `at`'s status (None when it has none), without making the row."""
        value = self._values[self._held[3 * at]]
        return None if value is ABSENT else value

    def worktree(self, at: int) -> Any:
        """Row `at`'s gitWorktreeRoot (None when it has none), without making the row."""
        value = self._values[self._held[3 * at + 2]]
        return None if value is ABSENT else value

    def fields(self, at: int) -> dict[str, Any]:
        ref = self._refs[at]
        return decoded_block(self._blocks, ref) if ref >= 0 else decoded_block(None, self._large[-1 - ref])

    def block_place(self, at: int) -> int | None:
        """The place of row `at`'s block in the table's file (a row `made` from it has it
        as its `_at`), or None when the block is too large for the file."""
        ref = self._refs[at]
        return ref if ref >= 0 else None

    def block(self, at: int) -> bytes:
        ref = self._refs[at]
        return block_bytes(self._blocks, ref) if ref >= 0 else self._large[-1 - ref]

    def packed(self, at: int, previews: Any) -> PackedRow:
        """Row `at` as a PackedRow of its own with `previews` (its block shared)."""
        out = self.row(at)
        out.__class__ = PackedRow
        ref = self._refs[at]
        out._file, out._at = (self._blocks, ref) if ref >= 0 else (None, self._large[-1 - ref])
        out._previews = previews
        return out

    def cell(self, at: int) -> str | None:
        """Row `at`'s cell ID (a link into this space at no path), or None."""
        if not self._flags[at] & _HAS_CELL:
            return None
        other = self._other.get(at)
        if other is not None:
            return other
        return ID_PREFIX + self._cells.get(at).decode("ascii")

    def link(self, at: int) -> Link | None:
        """The root's link to row `at`'s cell, or None (a row held in the root itself)."""
        cell = self.cell(at)
        if cell is not None:
            return Link.trusted(cell, self._space)
        other = self._other.get(at)
        return other if type(other) is Link else None

    def previews(self, at: int) -> Any:
        flags = self._flags[at]
        if flags & _STORED_PREVIEWS:
            return StoredPreviews(self._store, self._space, self.cell(at))  # type: ignore[arg-type]
        if flags & (_PREVIEW_CELLS | _SPILLED_PREVIEWS):
            kind = PreviewCells if flags & _PREVIEW_CELLS else SpilledPreviews
            return kind(self._spill, self._preview_offsets[at], self._preview_lengths[at])  # type: ignore[arg-type]
        return self._other.get(~at, NO_PREVIEWS)

    def made(self, at: int) -> PackedRow:
        """Row `at` as a PackedRow of its own (its block in the table's file): what a
        publication's touches give for a row. Previews in the table's spill are held as
        their place (`SpilledRow`), others as their stand-in."""
        flags = self._flags[at]
        if not flags & (_PREVIEW_CELLS | _SPILLED_PREVIEWS) or self._refs[at] < 0:
            return self.packed(at, self.previews(at))
        cells = 1 if flags & _PREVIEW_CELLS else 0
        out = self.packed(at, self._preview_offsets[at] << 33 | self._preview_lengths[at] << 1 | cells)
        out.__class__ = SpilledRow
        return out

    @property
    def blocks(self) -> BlockFile:
        """The file of the rows' blocks (a row `packed` from the table keeps it)."""
        return self._blocks

    # -- Mapping ---------------------------------------------------------------------------

    def __getitem__(self, key: str) -> PackedRow:
        at = self.position(key)
        if at is None:
            raise KeyError(key)
        return self.row(at, key)

    def get(self, key: str, default: Any = None) -> Any:
        at = self.position(key)
        return default if at is None else self.row(at, key)

    def __contains__(self, key: object) -> bool:
        return self.position(key) is not None

    def __iter__(self) -> Iterator[str]:
        return map(self.key, range(len(self._key_ends)))

    def __len__(self) -> int:
        return len(self._key_ends)

    def items(self) -> ItemsView[str, PackedRow]:
        return _Items(self)

    def values(self) -> ValuesView[PackedRow]:
        return _Values(self)


def row_fields(rows: Mapping[str, Mapping[str, Any]], key: str) -> Mapping[str, Any]:
    """The fields of `rows[key]` at once, read-only, without its previews (a packed row's
    block decoded once; a table's row not even made). KeyError when there is none."""
    if type(rows) is PriorRows:
        at = rows.position(key)
        if at is None:
            raise KeyError(key)
        return rows.fields(at)
    row = rows[key]
    return row.fields() if isinstance(row, PackedRow) else row


class _Items(ItemsView[str, PackedRow]):
    _mapping: PriorRows

    def __iter__(self) -> Iterator[tuple[str, PackedRow]]:
        table = self._mapping
        for at in range(len(table)):
            row = table.row(at)
            yield row.key, row


class _Values(ValuesView[PackedRow]):
    _mapping: PriorRows

    def __iter__(self) -> Iterator[PackedRow]:
        table = self._mapping
        return (table.row(at) for at in range(len(table)))


class TableRow(PackedRow):
    """A prior row made from its table when asked: `_file` is the table, `_at` the row."""

    __slots__ = ()
    _file: PriorRows  # type: ignore[assignment]
    _at: int

    def _fields(self) -> dict[str, Any]:
        return self._file.fields(self._at)

    def _bytes(self) -> bytes:
        return self._file.block(self._at)

    def _stand_in(self) -> Any:
        return self._file.previews(self._at)

    def with_previews(self, previews: Any) -> PackedRow:
        return self._file.packed(self._at, previews)


class _SpillBlocks(BlockFile):
    """The block file of a table whose rows' previews are in `previews` (SpilledRow's)."""

    def __init__(self, previews: PreviewSpill) -> None:
        super().__init__()
        self.previews = previews


class SpilledRow(PackedRow):
    """A row of a publication's touches (touch_table.py) whose previews are in the table's
    spill: `_previews` is their place there (offset << 33 | length << 1 | 1 for preview
    cells), the stand-in made when asked (issue 14 goal 4: a stand-in and its two ints,
    116 bytes a row, were held through the commit)."""

    __slots__ = ()
    _file: _SpillBlocks

    def _stand_in(self) -> Any:
        place = self._previews
        kind = PreviewCells if place & 1 else SpilledPreviews
        return kind(self._file.previews, place >> 33, (place >> 1) & 0xFFFFFFFF)

    def same_as(self, other: PackedRow) -> bool | None:
        if type(other) is SpilledRow and (self._file, self._at, self._previews) == (
                other._file, other._at, other._previews):
            return True  # one block, one place of the previews
        return super().same_as(other)

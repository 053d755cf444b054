"""A publication's touches by key, held as one table until its commit (issue 14 goal 4).

A publication notes a `Touch` per session it observes (publication_resolve.py says what
each kind means). A first sync observes 25,000 sessions, each with a new row; held as a
dict of packed rows (the row object, its key string, its block's offset, its previews'
stand-in with its place, the dict entries), they were most of what its memory grew by
while the reads ran, about 0.5 KB a session (docs/store-size-and-speed.md, "Session 28:
a first sync's new rows held as a table"). Here every touch is an entry of a row table
(prior_table.PriorRows, the prior rows' own machinery): the key's bytes, its hash and
slot, its row's block in the table's file, the row's held fields as indices, its
previews' place in the publication's PreviewSpill, and a byte and an index for its kind
and its source's (source id, sequence). No object a session: a `Touch` and its row are
made when the commit reads them; a touch of another kind is one object a kind and a
source, as it was.

A touch of another kind ("prior", "partial", "keep": one `Touch` a kind and a source)
of a key with no entry is held by the key's place in the prior table (`prior`, the rows
the publication read at its start), a byte and an index a prior row: a listing idle
sync's 25,000 retained sessions held a key string and a dict entry each until the commit
(about 3.5 MB at 25,000, issue 14 goal 4, session 29). A key of neither table is kept in
a dict, as before. It is a Mapping of Touch by key with a dict's semantics (a key's last touch), its keys
in the order of their entries, then of the others, then the placed ones (no rule depends on it: `resolve`'s
rows are ordered by the index's own order), so `resolve` reads it as it read the dict.
"""

from __future__ import annotations

from array import array
from collections.abc import ItemsView, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any, Literal

from lib.fabric.packed_previews import PreviewSpill
from lib.fabric.packed_rows import BlockFile, PackedRow, packed
from lib.fabric.prior_table import PriorRows

TouchKind = Literal["row", "prior", "partial", "keep"]
_KINDS: tuple[TouchKind, ...] = ("row", "prior", "partial", "keep")
_ROW = 0


@dataclass(slots=True)  # made when the commit reads a touch (Touches holds none a session)
class Touch:
    source_id: str
    sequence: int
    kind: TouchKind
    row: Mapping[str, Any] | None = None  # a "row" touch's row

    def __post_init__(self) -> None:
        # held until the commit: one packed block per row, not a dict of small objects
        if self.row is not None:
            self.row = packed(self.row)


class Touches(Mapping[str, Touch]):
    """A publication's touches by key (the module's docstring). `previews`: the
    publication's spill, whose stand-ins a held row keeps as their place."""

    __slots__ = ("_table", "_kinds", "_source_of", "_sources", "_source_at", "_shared", "_others", "retouched",
                 "prior", "_placed", "_placed_source", "_placed_count")

    def __init__(self, previews: PreviewSpill | None = None, prior: Mapping[str, Any] | None = None) -> None:
        self._table = PriorRows(None, "", cells=False, previews=previews)
        self._table.duplicate()  # indexed from the start: each touch looks its key up
        self._kinds = bytearray()  # an entry's kind (_KINDS)
        self._source_of = array("I")  # an entry's (source id, sequence), in `_sources`
        self._sources: list[tuple[str, int]] = []
        self._source_at: dict[tuple[str, int], int] = {}
        self._shared: dict[tuple[Any, ...], Touch] = {}  # a touch of another kind, by (kind, source)
        self._others: dict[str, Touch] = {}  # touches of another kind whose key has no entry
        self.retouched = False  # whether a key was touched more than once
        # touches of another kind of the prior table's keys, by the key's place there
        self.prior = prior if type(prior) is PriorRows else None  # other rows (a cached prior's dict): by key
        self._placed = bytearray(len(self.prior) if self.prior is not None else 0)  # 1 + the kind's index; 0: none
        self._placed_source = array("I", [0]) * len(self._placed)  # its (source id, sequence), in `_sources`
        self._placed_count = 0

    @property
    def table(self) -> PriorRows:
        """The table of the touches' entries (a "row" touch's row is its entry's row):
        `resolve` keeps such a row by its place there (a first sync, publication_resolve.py)."""
        return self._table

    def entries(self) -> Iterator[tuple[int, Touch]]:
        """(place in `table`, touch) of each entry, a "row" touch's row not made (None)."""
        kinds, sources = self._kinds, self._source_of
        for at in range(len(kinds)):
            yield at, self._shared_touch(kinds[at], sources[at])

    @property
    def blocks(self) -> BlockFile:
        """The file of the held rows' blocks: a row made from here keeps it, and its
        place there tells one held row from another (early_rows.py)."""
        return self._table.blocks

    def __setitem__(self, key: str, touch: Touch) -> None:
        if touch.kind == "row" and touch.row is not None:
            self.hold(key, touch.source_id, touch.sequence, touch.row)
            return
        at = self._table.position(key) if len(self._table) else None
        if at is not None:
            self._note(at, _KINDS.index(touch.kind), touch.source_id, touch.sequence)
            return
        at = self.prior.position(key) if self._placed else None
        if at is not None:
            if self._placed[at]:
                self.retouched = True
            else:
                self._placed_count += 1
            self._placed[at] = 1 + _KINDS.index(touch.kind)
            self._placed_source[at] = self._source_index(touch.source_id, touch.sequence)
            return
        self.retouched = self.retouched or key in self._others
        named = (touch.kind, touch.source_id, touch.sequence)
        self._others[key] = self._shared.get(named) or self._shared.setdefault(named, touch)

    def hold(self, key: str, source_id: str, sequence: int, row: Mapping[str, Any]) -> PackedRow:
        """`row` (keyed `key`) as its "row" touch; returns it as held (its previews' stand-in
        one of the publication's spill, its place kept)."""
        assert row["key"] == key
        if self._others and self._others.pop(key, None) is not None:
            self.retouched = True
        if self._placed_count and (placed := self.prior.position(key)) is not None and self._placed[placed]:  # type: ignore[union-attr]
            self._placed[placed] = 0
            self._placed_count -= 1
            self.retouched = True
        at = self._table.put(row)
        self._note(at, _ROW, source_id, sequence)
        return self._table.made(at)

    def _source_index(self, source_id: str, sequence: int) -> int:
        source = self._source_at.get((source_id, sequence))
        if source is None:
            source = self._source_at[(source_id, sequence)] = len(self._sources)
            self._sources.append((source_id, sequence))
        return source

    def _note(self, at: int, kind: int, source_id: str, sequence: int) -> None:
        source = self._source_index(source_id, sequence)
        if at == len(self._kinds):
            self._kinds.append(kind)
            self._source_of.append(source)
        else:
            self.retouched = True
            self._kinds[at], self._source_of[at] = kind, source

    def _touch(self, at: int) -> Touch:
        kind, source = self._kinds[at], self._source_of[at]
        if kind == _ROW:
            return Touch(*self._sources[source], "row", self._table.made(at))
        return self._shared_touch(kind, source)

    def _shared_touch(self, kind: int, source: int) -> Touch:
        named = (_KINDS[kind], *self._sources[source])
        shared = self._shared.get(named)
        if shared is None:
            shared = self._shared[named] = Touch(*self._sources[source], _KINDS[kind])
        return shared

    def placed(self) -> Iterator[tuple[int, Touch]]:
        """The touches held by their key's place in `prior`: (place, touch)."""
        kinds, sources = self._placed, self._placed_source
        if not self._placed_count:
            return
        for at, kind in enumerate(kinds):
            if kind:
                yield at, self._shared_touch(kind - 1, sources[at])

    def placed_at(self, at: int) -> bool:
        """Whether `prior`'s row `at` has a touch held by its place."""
        return bool(self._placed) and self._placed[at] != 0

    def __getitem__(self, key: str) -> Touch:
        touch = self._others.get(key)
        if touch is not None:
            return touch
        at = self._table.position(key)
        if at is not None:
            return self._touch(at)
        at = self.prior.position(key) if self._placed_count else None  # type: ignore[union-attr]
        if at is None or not self._placed[at]:
            raise KeyError(key)
        return self._shared_touch(self._placed[at] - 1, self._placed_source[at])

    def __contains__(self, key: object) -> bool:
        if key in self._others or self._table.position(key) is not None:
            return True
        at = self.prior.position(key) if self._placed_count else None  # type: ignore[union-attr]
        return at is not None and self._placed[at] != 0

    def __iter__(self) -> Iterator[str]:
        placed = (self.prior.key(at) for at, _ in self.placed())  # type: ignore[union-attr]
        return chain(self._table, self._others, placed)

    def __len__(self) -> int:
        return len(self._table) + self._placed_count + len(self._others)

    def items(self) -> ItemsView[str, Touch]:
        return _Items(self)


    def unplaced(self) -> Iterator[tuple[str, Touch]]:
        """The touches not held by a place in `prior`, by key."""
        for at in range(len(self._table)):
            touch = self._touch(at)
            yield (touch.row["key"] if touch.row is not None else self._table.key(at)), touch
        yield from self._others.items()

    def others(self) -> ItemsView[str, Touch]:
        """The touches of keys with no entry and no place in `prior`, by key."""
        return self._others.items()


class _Items(ItemsView[str, Touch]):
    _mapping: Touches

    def __iter__(self) -> Iterator[tuple[str, Touch]]:
        touches = self._mapping
        yield from touches.unplaced()
        for at, touch in touches.placed():
            yield touches.prior.key(at), touch  # type: ignore[union-attr]

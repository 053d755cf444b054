"""The cells of changed index rows, held on disk until the index commit's final
transaction (issue 14 goal 4, session 29).

A row whose cell the current index roots link (a changed row: its status moved, its
previews grew) may be written only in the transaction that writes the roots: a reader
must never see a changed row before the roots that count it, and a crash before that
transaction must leave the old rows and roots. Held as planned cells (values), a resync
that changed every row of 25,000 held 26 KB a row until then (645 MB). Here each cell is
its ID and fvj1 text, appended to a private temporary file (record_spill.py: 0600,
unlinked), compared with what is stored a batch at a time (`changed`), and streamed
into the final transaction (`Transaction.write_streamed`), so memory holds a batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

import orjson

from lib.fabric import value_decoding, values
from lib.fabric.graph_commit import READ_BATCH
from lib.fabric.graph_plan import PlannedCell
from lib.fabric.row_cells import DirectRow
from lib.fabric.session_graph import GraphTarget
from lib.hashing import value_hash
from lib.record_spill import RecordSpill


class HeldCells:
    """(cell ID, fvj1 text) pairs in the order added, kept in a temporary file; iterable
    any number of times (a commit may be attempted again)."""

    def __init__(self) -> None:
        self._spill = RecordSpill()

    def __len__(self) -> int:
        return len(self._spill)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._spill)

    def add(self, cell_id: str, text: str) -> None:
        self._spill.add((cell_id, text))

    def add_row(self, row: DirectRow) -> None:
        for cell_id, text in zip(row.ids, row.texts, strict=True):
            self._spill.add((cell_id, text))

    def add_planned(self, cells: Iterable[PlannedCell]) -> None:
        for cell in cells:
            self._spill.add((cell.id, values.dumps(cell.value)))

    def take_changed(self, target: GraphTarget) -> HeldCells:
        """The held cells whose stored value differs (or that are absent), read back
        READ_BATCH at a time (most of a changed row's previews are as stored); this one
        is emptied then (its file closed)."""
        out = HeldCells()
        pairs = iter(self._spill)
        while batch := list(islice(pairs, READ_BATCH)):
            stored = target.store.read_texts(target.space, [cell_id for cell_id, _ in batch])
            for cell_id, text in batch:
                held = stored.get(cell_id)
                if held is None or not _same_value(held, text):
                    out.add(cell_id, text)
        self.clear()
        return out

    def clear(self) -> None:
        self._spill.clear()


def _same_value(stored: str, text: str) -> bool:
    """Whether two fvj1 texts hold one value: the same text as a rule, else the same value
    hash (the planner's test: equal values may be written with their fields in another
    order). Texts whose JSON differs (Python's ==, which equates more than values do:
    1 and 1.0, fields in any order) hold different values, told without decoding them
    (a changed row's cell: its status); JSON orjson refuses (a lone surrogate) is decoded."""
    if stored == text:
        return True
    try:
        if orjson.loads(stored) != orjson.loads(text):
            return False
    except orjson.JSONDecodeError:
        pass
    return value_hash(value_decoding.loads(stored)) == value_hash(value_decoding.loads(text))


"""Rows new to the index written while the publication runs, not at its commit (issue 14).

A first sync's index commit wrote every new row's cells (about 13 a row: the previews
and the row cell) at the very end, after the agent had answered its last read: pure
added wall time (3.5 s of a 3,000-thread first sync). So a publication writes a new
row's cells as it goes, ROW_BATCH rows a transaction (index_store.row_groups), as
`commit_indexes` would have written them (row_cells.direct_rows: the same IDs and
texts), and leaves the commit only what depends on the whole listing: the roots and
the ordering. A group is a graph_batch.SealedWrite, as a graph batch is: its stored
forms are made on the graph batches' worker thread, its transaction (the rules' path,
row by row) runs on the caller's thread when the next group is sealed or at `flush`.

Safe as the commit's own early groups are: nothing reaches a row cell until the roots
link it, so a crash leaves unreachable cells, never an index pointing at a missing one.
A row is written only once the session graph it links is committed (a graph batch
stages several sessions' graphs: rows wait for theirs), so no stored document links a
missing cell either. Without the publish lock two rules keep it so:

- each transaction requires every cell it writes to be absent (a row cell's ID is
  keyed by the session, not content addressed: a cell that exists may be one another
  index links). If one exists, nothing of the group is written, and its rows are left
  to the commit, which writes them under the lock as before. Where the store says this
  run writes it alone (`Store.writes_alone`: a first sync into an empty SQLite store,
  its key index deferred, sqlite_key_index.py), a group none of whose keys was written
  before has no cell that exists, and is inserted as fresh rows instead (no row read);
- the commit links a cell written here only when the row it holds is the very row the
  commit publishes, the cell is not one the current roots link, and the cell's version
  is still the one written here (a publisher under the lock may have rewritten it and
  failed before linking it).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from lib.fabric import index_store
from lib.fabric.graph_batch import SealedWrite
from lib.fabric.packed_previews import FIELD as PREVIEWS
from lib.fabric.packed_previews import spilled_bytes
from lib.fabric.packed_rows import PackedRow
from lib.fabric.prior_table import TableRow
from lib.fabric.row_cells import DirectRow, direct_rows
from lib.fabric.schemas import SESSION_INDEX_ARRAY_SCOPE, scope
from lib.fabric.session_graph import GraphTarget
from lib.fabric.touch_table import Touches
from lib.fabric.values import Link
from lib.record_spill import RecordSpill


class EarlyRows:
    """The rows of one publication written before its commit, and where."""

    def __init__(
        self, target: GraphTarget, row_links: Mapping[str, Link], staged: Callable[[str], bool], touches: Touches
    ) -> None:
        self._target = target
        # the publication's touches, whose rows these are (until the commit: `end`), and
        # the file of their blocks: a row's place there tells it from another of its key
        self._touches: Touches | None = touches
        self._blocks = touches.blocks
        self._staged = staged  # whether a graph root is staged, not yet committed (GraphBatch.pending)
        self._prior_links = row_links  # the prior index's (read at the publication's start)
        self._linked: set[str] | None = None  # their cell IDs, made when first needed
        self._waiting: list[Mapping[str, Any]] = []
        self._waiting_bytes = 0
        # (key, cell ID, the seq it was written at, its cells, the row's block's place) a
        # row written, on disk until the commit's first `take` (issue 14 goal 4: a tuple, a
        # cell ID string and a dict entry to the row a session were held through a first
        # sync's reads); the commit links the cell only if it publishes that very row
        self._cells = RecordSpill()
        self._noted: WrittenRows | None = None  # those, by the row's place, at the commit
        self._count = 0  # rows written here (their entries go as the commit takes them)
        self._sealed: tuple[Sequence[Mapping[str, Any]], list[DirectRow], SealedWrite] | None = None

    def add(self, row: Mapping[str, Any]) -> None:
        """A row new to this publication (a packed row, its previews spilled): written
        with the next group."""
        if row["key"] in self._prior_links:  # a changed row: the commit compares it
            return
        held = spilled_bytes(row.get(PREVIEWS))
        # the commit's bounds on a group (index_store.row_groups), read when used
        full = len(self._waiting) >= index_store.ROW_BATCH or self._waiting_bytes + held > index_store.GROUP_BYTES
        if self._waiting and full:
            self.write()
        self._waiting.append(row)
        self._waiting_bytes += held

    def write(self) -> None:
        """Write the cells of the waiting rows whose graphs are committed (the rest wait
        on), in the commit's groups (index_store.row_groups); the last group's stored
        forms may still be in the making (`flush` commits it)."""
        ready: list[Mapping[str, Any]] = []
        waiting: list[Mapping[str, Any]] = []
        for row in self._waiting:
            manifest = row.get("manifest")
            (waiting if type(manifest) is Link and self._staged(manifest.id) else ready).append(row)
        self._waiting, self._waiting_bytes = waiting, sum(spilled_bytes(row.get(PREVIEWS)) for row in waiting)
        for group in index_store.row_groups(ready):
            self._seal(group)

    def flush(self) -> None:
        """Write every waiting row (their graphs are committed: GraphBatch.flush first)."""
        self.write()
        self._commit_sealed()

    def end(self) -> None:
        """At the publication's commit: commit the sealed group, and leave the rows still
        waiting to the commit, which writes them in its own groups (new cells in one
        statement, no row read; under the publish lock). Another early group there (its
        stored forms waited for, its rows read, its own transaction) made the commit, all
        of it wall time after the agent's last answer, 50 to 90 ms longer at 300 threads."""
        self._commit_sealed()
        self._waiting, self._waiting_bytes = [], 0
        self._touches = None  # resolved at the commit: not held through it

    def discard(self) -> None:
        """Drop what waits (an abandoned publication): nothing links it. The sealed
        group's stored forms, if being made, are waited for; it is never committed."""
        sealed, self._sealed = self._sealed, None
        if sealed is not None:
            sealed[2].drop()
        self._waiting, self._waiting_bytes = [], 0
        self._cells.clear()

    def _seal(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Assemble the cells of `rows` of the usual shape (row_cells.py) and seal them
        (graph_batch.SealedWrite: their stored forms made on the worker thread, where the
        store makes them without the GIL), after committing the group before."""
        self._commit_sealed()
        target = self._target
        if self._linked is None:
            self._linked = {link.id for link in self._prior_links.values()}
        direct, _ = direct_rows(rows, scope(target.space, target.owner, SESSION_INDEX_ARRAY_SCOPE), self._linked)
        if not direct:
            return
        ids = [cell for row in direct for cell in row.ids]
        texts = [text for row in direct for text in row.texts]
        background = target.store.batch_commits_release_gil()
        # every cell required absent: a group that meets one commits nothing (its rows are
        # the commit's); but where the store is written by this run alone, its cells are
        # known absent (a row's cells are named by its key; none of these keys written
        # before) and go in as fresh rows, on the worker, with no row read
        fresh = target.store.writes_alone(target.space) and self._new_keys(direct)
        self._sealed = (rows, direct, SealedWrite(target, ids, texts, background=background, require_absent=not fresh))
        if not background:
            self._commit_sealed()

    def _commit_sealed(self) -> None:
        """The sealed group's cells in one transaction, which writes nothing if one of
        them exists (its rows are then the commit's, as before); else its rows are noted
        as written."""
        sealed, self._sealed = self._sealed, None
        if sealed is None:
            return
        rows, direct, write = sealed
        seq = write.committed()
        if seq is None:
            return
        by_key = {row["key"]: row for row in rows}
        for row in direct:
            place = self._place(by_key[row.key])
            self._cells.add((row.key, row.link.id, seq, len(row.ids), -1 if place is None else place))
        self._count += len(direct)

    def take(self, row: Mapping[str, Any], linked: set[str]) -> tuple[Link, int] | None:
        """(the link to `row`'s cell, the cells written for it) when it was written here
        and the commit may link it as it is (the module's docstring), else None. Called
        under the publish lock, with `linked` the cells the current roots link, once a
        row: the row's entry is dropped."""
        if self._noted is None:
            self._noted = WrittenRows(self._cells)
            self._cells.clear()
        place = self._place(row)
        if place is None:
            return None  # not a row whose block is in the touches' file: none written here
        # the commit asks once a row: its entry goes now, and the table once empty or
        # once the commit has taken all (`taken_all`), not held through the roots' final
        # transaction (issue 14 goal 4)
        noted = self._noted.pop(place)
        if noted is None:
            return None  # not the very row written here (its key touched again since)
        cell, seq, cells = noted
        if cell in linked or self._target.store._read_version(self._target.space, cell) != seq:
            return None
        return Link.trusted(cell, self._target.space), cells

    def _place(self, row: Mapping[str, Any]) -> int | None:
        """The place of `row`'s block in the touches' file, or None: a row made from the
        touches (its block's place is its `_at`) or one of their table's rows kept by its
        place (a first sync's, publication_resolve.py: the table knows its block)."""
        if type(row) is TableRow and row._file.blocks is self._blocks:
            return row._file.block_place(row._at)
        return row._at if isinstance(row, PackedRow) and row._file is self._blocks else None

    def taken_all(self) -> None:
        """The commit has taken every row it will: what is noted of rows it did not take
        (a key touched again since) goes, not held through the roots' final transaction."""
        self._noted = WrittenRows(())
        self._cells.clear()

    def _new_keys(self, direct: list[DirectRow]) -> bool:
        """Whether the rows' keys are distinct and none was written before (a key is
        written once unless it was touched again)."""
        touches = self._touches
        return touches is not None and not touches.retouched and len({row.key for row in direct}) == len(direct)

    def __len__(self) -> int:
        return self._count


class WrittenRows:
    """What EarlyRows noted of each row it wrote, by the place of the row's block in the
    touches' file (packed_rows: an offset and length in one int): its cell ID, the seq
    it was written at and its cells, in arrays, found by an open-addressed index of the
    places (4 bytes a slot, at most half full).

    The commit looks a row up by its place (the row it publishes is the very one written
    only if its place is the one noted). A dict by key made a tuple, a key and a cell ID
    string a row at the commit's first `take`: 7.5 MB at once for 25,000 new rows, the
    first sync's peak (issue 14 goal 4). Records of a row that was no table row (place
    -1) can never be taken: they are not kept.
    """

    def __init__(self, records: Collection[tuple[str, str, int, int, int]]) -> None:
        self._empty(len(records))
        for _key, cell, seq, cells, place in records:
            if place >= 0:
                self._slots[self._slot(place)] = len(self._places)
                self._places.append(place)
                self._ids += cell.encode("ascii")
                self._id_ends.append(len(self._ids))
                self._seqs.append(seq)
                self._cells.append(cells)
        self._left = len(self._places)

    def _empty(self, count: int) -> None:
        """No entry, with slots for `count` (at most half of them filled)."""
        size = 8
        while size < 2 * count:
            size *= 2
        self._slots = array("i", [-1]) * size  # entry numbers by place (-1: empty, -2: taken)
        self._places = array("q")
        self._ids = bytearray()  # the cell IDs (ASCII), the n-th ending at `_id_ends[n]`
        self._id_ends = array("Q")
        self._seqs = array("q")
        self._cells = array("I")

    def _slot(self, place: int) -> int:
        """The slot of `place`, or of the empty one where it would go."""
        slots, mask = self._slots, len(self._slots) - 1
        slot = (place * 0x9E3779B97F4A7C15 >> 16) & mask  # a place's low bits are a length
        while slots[slot] != -1 and (slots[slot] < 0 or self._places[slots[slot]] != place):
            slot = (slot + 1) & mask
        return slot

    def pop(self, place: int) -> tuple[str, int, int] | None:
        """(cell ID, seq, cells) of the row written at `place`, dropped; None if none.
        Once every entry is taken the arrays go."""
        if not self._left:
            return None
        slot = self._slot(place)
        entry = self._slots[slot]
        if entry < 0:
            return None
        self._slots[slot] = -2  # taken: later places probed past it still found
        start = self._id_ends[entry - 1] if entry else 0
        noted = (self._ids[start : self._id_ends[entry]].decode("ascii"), self._seqs[entry], self._cells[entry])
        self._left -= 1
        if not self._left:
            self._empty(0)
        return noted

    def __len__(self) -> int:
        return self._left

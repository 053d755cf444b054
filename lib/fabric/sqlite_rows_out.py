"""How the SQLite store writes a commit's rows (sqlite_store.py's `_commit`, inside its
write transaction): each row's labels id, its stored value, in the primary key's order.

A plan whose writer expects its cells new (Transaction.expect_new_cells, set by
graph_batch.py) of whole-value writes alone, none of whose cells has a row (a first sync's graph
batches: content-addressed cells known absent), needs nothing read first: the rules
(commit_rules.resolve_commit) then write every cell, with the labels given or the
writer's own. `insert_fresh` inserts those rows with a plain INSERT, which stops at
the first row that exists (an IntegrityError, raised as RowExists); the caller's
transaction is then rolled back and the plan committed again by the rules, reading its
rows, in a transaction of its own. So a first sync's graph batches skip reading the
rows they write (3,000 cells a batch, all absent). Not a savepoint: SQLite copies each
page first changed under one to a statement journal (a temp file): 200 MB more written
in a 3,000-thread first sync.
While a first sync writes an empty store without its key index (sqlite_key_index.py)
no INSERT stops at an existing row: there the store itself knows which cells can exist
(those it wrote, and the few rows there before, which raise RowExists before the insert).

Those rows go to SQLite in one statement (sqlite_schema.INSERT_MANY, their bytes in a
few bound parameters), so the connection releases the GIL once for the whole insert:
graph_batch.py commits its batches on a second thread, which with `executemany` would
wait for the GIL after every row while the main thread runs Python
(docs/store-size-and-speed.md, "Session 25"). SQLite gives a statement of many rows a
statement journal of its own (as it would a savepoint): the price, paid on that thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import accumulate, islice

from lib.fabric import stored_values
from lib.fabric.cell_keys import in_key_order
from lib.fabric.commit_rules import CommitPlan, Row, RowWrite, Write, streamed_writes
from lib.fabric.documents import Labels
from lib.fabric.sqlite_labels import LabelRows
from lib.fabric.sqlite_schema import INSERT_MANY, NUMBER_WIDTH, UPSERT_ZEROS


class RowExists(Exception):
    """A fresh row's cell had a row: the transaction is rolled back, nothing written."""


class RowsOut:
    """The rows of one commit, written at `seq` into one space."""

    def __init__(
        self, conn: sqlite3.Connection, labels: LabelRows, space_id: int, seq: int, space: str,
        new_labels: dict[Labels, int],
    ) -> None:
        self._conn = conn
        self._labels = labels
        self._space_id = space_id
        self._seq = seq
        self._space = space
        self._new_labels = new_labels  # labels rows inserted, for LabelRows.committed

    def insert_fresh(self, writes: list[RowWrite]) -> Iterator[str | bytes]:
        """Insert the rows of cells that have none; RowExists when one has a row (the
        caller's transaction, rolled back, then takes the rules' path). Gives the rows'
        stored keys (while the key index is deferred, the store notes its roots)."""
        rows = in_key_order(writes)  # in key order: each B-tree page is visited once
        label_ids = self._label_ids(writes)
        stored = [self._stored(w) for _, w in rows]
        try:
            for start, end in _groups(stored):
                self._insert_many(rows[start:end], stored[start:end], label_ids)
        except sqlite3.IntegrityError as exc:  # a row exists: SQLite stopped at it
            raise RowExists() from exc
        return (stored_id for stored_id, _ in rows)

    def _insert_many(
        self, rows: list[tuple[str | bytes, RowWrite]], stored: list[str | bytes | None], label_ids: dict[int, int]
    ) -> None:
        """One INSERT_MANY statement for these rows (their stored values given)."""
        stored_ids = [k if type(k) is bytes else k.encode() for k, _ in rows]
        kinds = bytearray(2 * len(rows))
        kinds[0::2] = bytes([_KIND[type(k)] for k, _ in rows])
        kinds[1::2] = bytes([_KIND[type(v)] for v in stored])
        values = [v.encode() if type(v) is str else v or b"" for v in stored]
        ids_end, values_end = _numbers(accumulate(map(len, stored_ids))), _numbers(accumulate(map(len, values)))
        labels = _numbers([label_ids[id(w.labels)] for _, w in rows])
        ids, values = b"".join(stored_ids), b"".join(values)  # the parts go: one copy held
        self._conn.execute(INSERT_MANY, (
            self._space_id, self._seq, len(rows), ids, ids_end, values, values_end, bytes(kinds), labels,
        ))

    def write(self, statement: str, writes: list[RowWrite]) -> None:
        """Write the rows with `statement` (sqlite_schema's UPSERT), row by row; a stored
        value of LARGE_VALUE bytes or more then through SQLite's blob I/O (`_write_large`)."""
        space_id, seq = self._space_id, self._seq
        label_ids = self._label_ids(writes)
        large: list[tuple[str | bytes, int, bytes]] = []

        def rows() -> Iterator[tuple[object, ...]]:
            for stored_id, w in in_key_order(writes):  # in key order: each B-tree page visited once
                value = self._stored(w)
                if type(value) is bytes and len(value) >= LARGE_VALUE:
                    large.append((stored_id, label_ids[id(w.labels)], value))
                else:
                    yield space_id, stored_id, seq, label_ids[id(w.labels)], value

        self._conn.executemany(statement, rows())
        for stored_id, label_id, value in large:
            self._write_large(stored_id, label_id, value)

    def _write_large(self, stored_id: str | bytes, label_id: int, value: bytes) -> None:
        """A large value's row, written as zeros of its length (nothing bound, no record
        of the value made), then the value into the row's blob. Bound as a parameter,
        SQLite copied it twice (the parameter, then the row's record) beside ours: at
        25,000 sessions the index roots' and the ordering's stored forms, 1.3 MB each
        time, the listing idle sync's peak (issue 14 goal 4, session 30)."""
        conn = self._conn
        conn.execute(UPSERT_ZEROS, (self._space_id, stored_id, self._seq, label_id, len(value)))
        (rowid,) = conn.execute("SELECT rowid FROM documents WHERE space_id = ? AND cell_id = ?",
                                (self._space_id, stored_id)).fetchone()
        with conn.blobopen("documents", "value", rowid) as blob:
            blob.write(value)

    def write_streamed(
        self, statement: str, plan: CommitPlan, rows_of: Callable[[set[str]], Mapping[str, Row]]
    ) -> None:
        """Write the plan's streamed writes (Transaction.write_streamed) with `statement`,
        STREAM_BATCH cells at a time: their rows read (`rows_of`), the rules applied
        (commit_rules.streamed_writes), then written, so no more than a batch is held."""
        for cells, labels in plan.streamed:
            pairs = iter(cells)
            while batch := list(islice(pairs, STREAM_BATCH)):
                self.write(statement, streamed_writes(plan, batch, labels, rows_of({c for c, _ in batch})))

    def _label_ids(self, writes: list[RowWrite]) -> dict[int, int]:
        """Each write's labels id, by id() of its Labels object (inserted when new)."""
        # rows mostly share one Labels object: each object is hashed once, not each row
        by_object = {id(w.labels): w.labels for w in writes}
        ids = {labels: self._labels.id_of(self._conn, labels, self._new_labels) for labels in set(by_object.values())}
        return {at: ids[labels] for at, labels in by_object.items()}

    def _stored(self, write: RowWrite) -> str | bytes | None:
        """The row's value column: None deletes."""
        if write.text is None:
            return None
        return write.stored if write.stored is not None else stored_values.encode(write.text, self._space)


LARGE_VALUE = 1 << 17  # stored bytes written through SQLite's blob I/O, not bound (128 KiB)
STREAM_BATCH = 500  # streamed cells a batch: about what graph_commit.READ_BATCH reads at a time
_KIND = {bytes: ord("b"), str: ord("t"), type(None): ord("n")}  # INSERT_MANY's kinds


GROUP_BYTES = 2**20  # stored bytes a statement: the payload copies held stay about this


def _groups(stored: list[str | bytes | None]) -> Iterator[tuple[int, int]]:
    """(start, end) of consecutive rows of about GROUP_BYTES of stored values each (a
    row larger than that alone): each group is one statement, so the batch's values
    are never all copied at once (ours joined, then SQLite's copy of the parameter)."""
    start = size = 0
    for end, value in enumerate(stored, 1):
        size += len(value) if value is not None else 0
        if size >= GROUP_BYTES:
            yield start, end
            start, size = end, 0
    if start < len(stored):
        yield start, len(stored)


def _numbers(numbers: Iterable[int]) -> bytes:
    """Fixed-width decimals, INSERT_MANY's form of a column of row numbers (one %
    over the column: ten times a format call per number)."""
    column = tuple(numbers)
    return ((_NUMBER * len(column)) % column).encode("ascii")


_NUMBER = f"%0{NUMBER_WIDTH}d"  # a row number, zero-padded, for one % a column


def fresh_writes(plan: CommitPlan) -> list[RowWrite] | None:
    """For a plan whose writer expects its cells new (Transaction.expect_new_cells):
    the rows a plan of whole-value writes alone writes when none of its cells has a
    row (resolve_commit's answer then: nothing read, no precondition, each cell's labels
    those given or the writer's own); None for any other plan."""
    if not plan.expect_new or plan.streamed or plan.reads or plan.require_absent or plan.require_hash:
        return None
    owned: Labels | None = None
    writes = []
    for cell_id, op in plan.ops.items():
        if type(op) is not Write:
            return None
        labels = op.labels
        if labels is None:
            labels = owned = owned or Labels.owned_by(plan.writer)
        writes.append(RowWrite(cell_id, labels, op.text, op.stored))
    return writes

"""The embedded store: one SQLite file (stdlib sqlite3, WAL), shared by processes.

Commits that write run under `BEGIN IMMEDIATE`, which takes SQLite's single
write lock before anything is read, so commits from any number of threads and
processes serialize and the space's sequence numbers never repeat. Readers never
wait for writers: the file is in WAL mode (set once, when its schema is created),
opening an existing store only reads, and a commit that writes nothing is checked
in a read transaction. A writer holding the write lock past the busy timeout
surfaces as `StoreBusy`. Store locks are files beside the database (lock_files.py).

Threads: each thread gets its own connection (sqlite3 connections must not be used by
two threads at once, and per-thread connections let reads run in parallel under WAL).
`:memory:` is one database per connection: its single connection is guarded by a lock.

Values are stored as fvj1 JSON text (values.dumps), kept on disk as stored_values.py
says (same-space links shortened, large texts compressed); labels as JSON, each distinct
set once in the `labels` table (sqlite_schema.py). A deleted cell keeps its row, with a
NULL value, so `changes_since` reports the delete and its labels still guard who may
recreate it. An older schema is migrated when opened (sqlite_schema.migrate). Connections
(pragmas), the schema check, failures: sqlite_connections.py. A first sync into an empty
file writes rows without the key index, built at the end (sqlite_key_index.py).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from lib.fabric import sqlite_sequences, stored_values, value_decoding
from lib.fabric.cell_keys import cell, key, keys
from lib.fabric.commit_rules import CommitPlan, RowWrite, resolve_commit
from lib.fabric.documents import Document, Labels
from lib.fabric.lock_files import FileStoreLock
from lib.fabric.private_paths import Notice
from lib.fabric.sqlite_connections import (
    IN_BATCH,
    connect,
    failure,
    initialize,
    rows_in_batches,
    write_transaction,
)
from lib.fabric.sqlite_files import private_database_files
from lib.fabric.sqlite_key_index import KeyIndex, KeyIndexAbsent, index_present
from lib.fabric.sqlite_labels import LabelRows
from lib.fabric.sqlite_rows_in import rows_of, text_loader, texts_of
from lib.fabric.sqlite_rows_out import RowExists, RowsOut, fresh_writes
from lib.fabric.sqlite_schema import UPSERT
from lib.fabric.store import Store
from lib.fabric.store_errors import StoreError
from lib.fabric.store_lock import DEFAULT_TIMEOUT_SECONDS, LocalLockTable, OnWait, StoreLock
from lib.fabric.thread_connections import ThreadConnections

WAL_CHECK_SECONDS = 0.005  # how often wait_for_change asks whether another connection committed


class SQLiteStore(Store):
    """A Store in one SQLite file (or `:memory:`)."""

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0, notice: Notice | None = None
    ) -> None:
        self._memory = str(path) == ":memory:"
        self._path = ":memory:" if self._memory else str(Path(path).absolute())
        self._busy_timeout = busy_timeout
        self._threads: ThreadConnections[sqlite3.Connection] = ThreadConnections(self._connect)
        self._memory_connection: sqlite3.Connection | None = None
        self._registry_lock = threading.Lock()
        self._memory_lock = threading.RLock()
        self._space_ids: dict[str, int] = {}
        self._labels = LabelRows()
        self._closed = False
        self._store_id: str | None = None
        self._local_locks = LocalLockTable() if self._memory else None
        if not self._memory:
            private_database_files(Path(self._path), notice)
        self._key_index = KeyIndex(self._path, enabled=not self._memory)
        with self._connection() as conn:
            initialize(conn, self._path, memory=self._memory, notice=notice)
            self._key_index.open(conn)  # before anything reads or writes it

    def __repr__(self) -> str:
        return f"SQLiteStore({self._path!r})"

    # connections

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise StoreError("store-closed", f"store {self._path} is closed")
        try:
            if self._memory:  # one database, so one connection, taken in turn
                with self._memory_lock:
                    if self._memory_connection is None:
                        self._memory_connection = self._connect()
                    yield self._memory_connection
            else:
                yield self._threads.current()
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc

    def _connect(self) -> sqlite3.Connection:
        return connect(self._path, self._busy_timeout, memory=self._memory)

    def _failure(self, exc: sqlite3.Error) -> StoreError:
        return failure(self._path, self._busy_timeout, exc)

    def close(self) -> None:
        if self._key_index.deferred and not self._closed:
            self.finish_fresh_rows("")
        with self._registry_lock:
            self._closed = True
            memory, self._memory_connection = self._memory_connection, None
        for conn in self._threads.take_all() + ([memory] if memory is not None else []):
            conn.close()

    def lock(
        self,
        space: str,
        name: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        on_wait: OnWait | None = None,
    ) -> StoreLock:
        if self._local_locks is not None:
            return self._local_locks.lock(space, name, timeout=timeout, on_wait=on_wait)
        return FileStoreLock(self._path, space, name, timeout=timeout, on_wait=on_wait)

    # helpers

    def _space_id(self, conn: sqlite3.Connection, space: str, create: bool = False) -> int | None:
        found = self._space_ids.get(space)
        if found is not None:
            return found
        created = create and conn.execute(
            "INSERT OR IGNORE INTO spaces (did) VALUES (?)", (space,)
        ).rowcount == 1
        row = conn.execute("SELECT id FROM spaces WHERE did = ?", (space,)).fetchone()
        if row is None:
            return None
        if not created:  # a row this transaction inserted is gone if it rolls back
            self._space_ids[space] = row[0]
        return row[0]

    # reads

    def _read_row(self, space: str, cell_id: str) -> tuple[int, Document | None]:
        with self._connection() as conn:
            self._key_index.end(conn)  # a read by cell ID: its own deferred index built first
            space_id = self._space_id(conn, space)
            if space_id is None:
                return 0, None
            row = conn.execute(
                "SELECT seq, labels_id, value FROM documents WHERE space_id = ? AND cell_id = ?",
                (space_id, key(cell_id)),
            ).fetchone()
            if row is None:
                return 0, None
            seq, labels_id, stored = row
            if stored is None:
                return seq, None
            labels = self._labels.labels(conn, labels_id)
        return seq, Document(value_decoding.loads(stored_values.decode(stored, space)), labels, seq)

    def read_text(self, space: str, cell_id: str) -> tuple[int, Iterator[str]] | None:
        with self._connection() as conn:
            self._key_index.end(conn)
            space_id = self._space_id(conn, space)
            row = None if space_id is None else conn.execute(
                "SELECT seq, value FROM documents WHERE space_id = ? AND cell_id = ?", (space_id, key(cell_id))
            ).fetchone()
        return None if row is None or row[1] is None else (row[0], stored_values.decode_pieces(row[1], space))

    def _read_version(self, space: str, cell_id: str) -> int:
        with self._connection() as conn:
            self._key_index.end(conn)
            space_id = self._space_id(conn, space)
            if space_id is None:
                return 0
            row = conn.execute(
                "SELECT seq FROM documents WHERE space_id = ? AND cell_id = ?", (space_id, key(cell_id))
            ).fetchone()
        return 0 if row is None else row[0]

    def iter_many(
        self, space: str, cell_ids: Iterable[str], *, keep_fields: frozenset[str] = frozenset()
    ) -> Iterator[tuple[str, Document]]:
        # Batched primary-key lookups: one query per batch instead of one per cell. A
        # batch's rows are fetched before the first yield, so no cursor stays open across
        # a yield; only one batch of stored text is in memory at once.
        unique = list(dict.fromkeys(cell_ids))
        with self._connection() as conn:
            self._key_index.end(conn)
            space_id = self._space_id(conn, space)
        if space_id is None:
            return
        for start in range(0, len(unique), IN_BATCH):
            batch = unique[start : start + IN_BATCH]
            marks = ",".join("?" * len(batch))
            with self._connection() as conn:
                rows = conn.execute(f"SELECT cell_id, seq, labels_id, value FROM documents "
                                    f"WHERE space_id = ? AND cell_id IN ({marks})", (space_id, *map(key, batch))).fetchall()
                found = {cell(stored_id): (seq, self._labels.labels(conn, labels_id), stored)
                         for stored_id, seq, labels_id, stored in rows if stored is not None}
            del rows
            for cell_id in batch:
                row = found.pop(cell_id, None)
                if row is not None:
                    seq, labels, stored = row
                    if keep_fields:
                        value = stored_values.read_keeping(stored, space, keep_fields)
                    else:
                        value = value_decoding.loads(stored_values.decode(stored, space))
                    yield cell_id, Document(value, labels, seq)

    def read_texts(self, space: str, cell_ids: Iterable[str]) -> dict[str, str]:
        with self._connection() as conn:  # the stored texts decoded to fvj1, no value made
            self._key_index.end(conn)
            space_id = self._space_id(conn, space)
            return {} if space_id is None else texts_of(conn, space_id, space, cell_ids)

    def existing(self, space: str, cell_ids: Iterable[str], *, roots: bool = False) -> set[str]:
        # one query per batch of IDs, reading no value
        unique = list(dict.fromkeys(cell_ids))
        found: set[str] = set()
        with self._connection() as conn:
            if roots:  # without the key index, while this handle writes a first sync
                stored = keys(unique)
                answer = self._key_index.roots_present(conn, lambda: self._space_id(conn, space), stored)
                if answer is not None:
                    return {cell_id for cell_id, k in zip(unique, stored, strict=True) if k in answer}
            else:
                self._key_index.end(conn)
            space_id = self._space_id(conn, space)
            if space_id is None:
                return found
            query = "SELECT cell_id FROM documents WHERE space_id = ? AND value IS NOT NULL AND cell_id IN ({marks})"
            found.update(cell(stored_id) for (stored_id,) in rows_in_batches(conn, query, space_id, keys(unique)))
        return found

    def head(self, space: str) -> int:
        with self._connection() as conn:
            row = conn.execute("SELECT head FROM spaces WHERE did = ?", (space,)).fetchone()
        return row[0] if row else 0

    def wait_for_change(self, space: str, seen: int, timeout: float, wake: threading.Event) -> None:
        """SQLite pushes nothing, but it tells a connection whether another one (of any
        process) committed since it last asked (`PRAGMA data_version`, read from the
        shared WAL index, no table read): between short waits on `wake` this asks, and
        returns once one did, so a waiter hears of a commit within WAL_CHECK_SECONDS
        instead of at the end of `timeout`."""
        if self._memory:
            wake.wait(timeout)
            return
        before = self._data_version()
        if self.head(space) != seen:  # committed before the version was taken
            return
        deadline = time.monotonic() + timeout
        while not wake.wait(min(WAL_CHECK_SECONDS, max(0.0, deadline - time.monotonic()))):
            if self._data_version() != before or time.monotonic() >= deadline:
                return

    def _data_version(self) -> int:
        with self._connection() as conn:
            return conn.execute("PRAGMA data_version").fetchone()[0]

    def changes_since(self, space: str, seq: int) -> list[tuple[str, int]]:
        with self._connection() as conn:
            space_id = self._space_id(conn, space)
            if space_id is None:
                return []
            rows = conn.execute("SELECT cell_id, seq FROM documents WHERE space_id = ? AND seq > ?",
                                (space_id, seq)).fetchall()
        # ordered here: stored IDs (cell_keys.py) do not sort as the IDs they hold
        return sorted(((cell(stored_id), row_seq) for stored_id, row_seq in rows), key=_by_seq_then_id)

    # writes

    def store_id(self) -> str:
        """A random id made once per database file (kept in its meta table)."""
        if self._store_id is None:
            with self._connection() as conn:
                row = conn.execute("SELECT value FROM meta WHERE key = 'storeId'").fetchone()
                if row is None:
                    with write_transaction(conn):
                        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('storeId', ?)", (uuid.uuid4().hex,))
                    row = conn.execute("SELECT value FROM meta WHERE key = 'storeId'").fetchone()
            self._store_id = f"sqlite:{row[0]}"
        return self._store_id

    def next_sequence(self, space: str, name: str) -> int:
        with self._connection() as conn, write_transaction(conn):
            return sqlite_sequences.next_value(conn, self._space_id(conn, space, create=True), name)

    def sequences(self, space: str) -> dict[str, int]:
        with self._connection() as conn:
            space_id = self._space_id(conn, space)
            return {} if space_id is None else sqlite_sequences.values(conn, space_id)

    def advance_sequence(self, space: str, name: str, value: int) -> None:
        with self._connection() as conn, write_transaction(conn):
            sqlite_sequences.advance(conn, self._space_id(conn, space, create=True), name, value)

    def stored_forms(self, space: str, texts: list[str]) -> list[str | bytes] | None:
        return stored_values.encode_many(texts, space)

    def stored_form_of_links(self, space: str, head: str, bodies: bytes | Iterable[bytes], tail: str,
                             count: int | None = None) -> str | bytes | None:
        return stored_values.encode_links(head, bodies, tail, space, count)

    def stored_form_of_pieces(self, space: str, pieces: Iterable[bytes]) -> tuple[str | bytes, int] | None:
        return stored_values.encode_pieces(pieces, space)

    def streams_writes(self) -> bool:  # _commit_rows writes them a batch at a time (sqlite_rows_out.py)
        return True

    def batch_commits_release_gil(self) -> bool:
        # the compression without the GIL, and new rows in one statement (sqlite_rows_out.py)
        return stored_values.ENCODES_WITHOUT_GIL

    def finish_fresh_rows(self, space: str) -> None:
        with self._connection() as conn:
            self._key_index.end(conn)

    def writes_alone(self, space: str) -> bool:
        return self._key_index.deferred

    def _commit(self, plan: CommitPlan) -> int:
        if not plan.ops and not plan.streamed:
            return self._check(plan)
        fresh = fresh_writes(plan)
        if fresh is not None:
            try:
                return self._commit_keyed(plan, fresh)
            except RowExists:  # rolled back: the rules' path, in a transaction of its own
                pass
        return self._commit_keyed(plan, None)

    def _commit_keyed(self, plan: CommitPlan, fresh: list[RowWrite] | None) -> int:
        """`_commit_rows`, once another handle's first sync (if one is writing without
        the key index) is over: sqlite_key_index.py."""
        return self._key_index.after_other_writer(lambda: self._commit_rows(plan, fresh), self._connection,
                                                  self._busy_timeout, self._path)

    def _commit_rows(self, plan: CommitPlan, fresh: list[RowWrite] | None) -> int:
        """Write the plan: `fresh`, its rows if none exists (RowExists, and the
        transaction rolled back, if one does), else the rows the rules say."""
        new_labels: dict[Labels, int] = {}
        key_index = self._key_index
        with self._connection() as conn:
            if fresh is None or not key_index.accepts(plan.writer):  # the rules' path: the index first
                key_index.end(conn)
            writer = plan.writer if fresh is not None else None
            with write_transaction(conn), key_index.deferring(conn, writer) as deferring:
                if not deferring and not index_present(conn):
                    raise KeyIndexAbsent()
                space_id = self._space_id(conn, plan.space, create=True)
                assert space_id is not None
                (head,) = conn.execute("SELECT head FROM spaces WHERE id = ?", (space_id,)).fetchone()
                rows_out = RowsOut(conn, self._labels, space_id, head + 1, plan.space, new_labels)
                if fresh is not None:
                    if key_index.meets_before(space_id, plan.ops):
                        raise RowExists()
                    key_index.written(conn, space_id, rows_out.insert_fresh(fresh))
                else:
                    rows = rows_of(conn, self._labels, space_id, plan.cells())
                    writes = resolve_commit(plan, rows, text_loader(conn, space_id, plan.space))
                    if not writes and not plan.streamed:
                        return head
                    rows_out.write(UPSERT, writes)
                    rows_out.write_streamed(UPSERT, plan, lambda cells: rows_of(conn, self._labels, space_id, cells))
                conn.execute("UPDATE spaces SET head = ? WHERE id = ?", (head + 1, space_id))
        self._labels.committed(new_labels)
        return head + 1

    def _check(self, plan: CommitPlan) -> int:
        """A plan that writes nothing: its checks against one read snapshot (a deferred
        transaction takes no write lock, so this never waits for a writer)."""
        with self._connection() as conn:
            self._key_index.end(conn)  # its own deferred index built first, outside the read
            with write_transaction(conn, "BEGIN"):
                space_id = self._space_id(conn, plan.space)
                if space_id is None:  # nothing was ever written: every read saw version 0
                    resolve_commit(plan, {}, text_loader(conn, -1, plan.space))
                    return 0
                rows = rows_of(conn, self._labels, space_id, plan.cells())
                resolve_commit(plan, rows, text_loader(conn, space_id, plan.space))
                (head,) = conn.execute("SELECT head FROM spaces WHERE id = ?", (space_id,)).fetchone()
        return head


def _by_seq_then_id(change: tuple[str, int]) -> tuple[int, str]:
    return change[1], change[0]


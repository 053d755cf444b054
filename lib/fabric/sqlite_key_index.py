"""The documents' key index (`documents_by_cell`, schema version 3) left out while a
first sync fills an empty store, and built once at its end (issue 14 goal 1).

Why: a graph batch's rows have random keys, so once the key index has more leaves
than a batch has rows, every row costs a leaf read, a statement-journal copy, a WAL
frame and the checkpoint's read and write: a 25,000-thread first sync wrote 15 GB for
a 1.3 M-row store, its commits' CPU growing with the store (docs/store-size-and-
speed.md, "Session 26: the 25,000-thread first sync"). Rows appended to the table
without the index, and the index built once in one sorted pass, cost a fraction.

The rules (sqlite_store.py applies them):

- Who defers: a handle whose commit of fresh rows (sqlite_rows_out.fresh_writes) finds
  the `documents` table empty but for one first commit of a few rows in a space (a
  target's opening writes its index roots) takes the key-index lock (a lock file beside
  the database) without waiting and drops the index in the transaction that inserts
  those rows. Until it builds the index again it is the only writer of `documents`; the
  rows there before are noted (`fresh_roots`, and a fresh row meeting one is RowExists,
  as with the index).
- When it builds it (`build`: one sorted pass, in one transaction): at
  `Store.finish_fresh_rows` (GraphBatch.flush: after the last batch, before any index
  is committed), before any other commit of its own that is not fresh rows, before a
  read by cell ID of its own, and when it closes.
- What it answers meanwhile: `existing(roots=True)` from `fresh_roots`, the roots it
  was asked about, found absent, and then wrote (a graph's root is written only after
  that, graph_batch.py); `changes_since` by the seq index. Every other read builds first.
- Other handles and processes: a commit that finds the index absent waits for the
  key-index lock (up to the busy timeout, then StoreBusy), builds the index if it is
  still absent (its writer died), and commits. Reads never wait: without the index a
  read by cell ID scans the table, slower but correct; no row of the run is linked by
  an index root before the build (the roots are committed after `flush`).
- A crash: the file keeps its committed batches without the index; the next handle to
  open it builds it (`repair`: duplicate keys, which only a broken writer could leave,
  keep their last row, as a rewrite would) before it reads or writes anything.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping

from lib.fabric.cell_keys import cell
from lib.fabric.lock_files import FileStoreLock
from lib.fabric.sqlite_connections import rows_in_batches, write_transaction
from lib.fabric.sqlite_schema import KEY_INDEX
from lib.fabric.store_errors import StoreBusy

LOCK_NAME = "key-index"
_CREATE = f"CREATE UNIQUE INDEX {KEY_INDEX} ON documents (space_id, cell_id)"
# the last row of each key stays: later rowids are later writes
_DEDUPLICATE = (
    "DELETE FROM documents WHERE rowid NOT IN (SELECT max(rowid) FROM documents GROUP BY space_id, cell_id)"
)


def index_present(conn: sqlite3.Connection) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (KEY_INDEX,)
    ).fetchone() is not None


def build(conn: sqlite3.Connection) -> None:
    """Build the key index in one transaction (the caller holds the key-index lock)."""
    with write_transaction(conn):
        _build(conn)


def _build(conn: sqlite3.Connection) -> None:
    """In the caller's write transaction: the key index, duplicate keys first keeping
    their last row; nothing when it is there."""
    if index_present(conn):
        return
    try:
        conn.execute(_CREATE)
    except sqlite3.IntegrityError:  # only a broken writer leaves two rows of one key
        conn.execute(_DEDUPLICATE)
        conn.execute(_CREATE)
    conn.execute("DELETE FROM fresh_roots")


class KeyIndexAbsent(Exception):
    """Another handle is writing without the key index: this commit waits for it."""


class KeyIndex:
    """One store handle's part: whether it holds the index deferred, its lock, and the
    roots asked absent meanwhile (until written: a batch or two of them)."""

    def __init__(self, path: str, *, enabled: bool = True) -> None:
        # the lock file's own take and give: taken on the batch worker, given back on
        # whichever thread builds the index (StoreLock ties a lock to its thread); none
        # for `:memory:` (one connection: nothing to gain)
        self._lock = FileStoreLock(path, "", LOCK_NAME) if enabled else None
        self._guard = threading.RLock()
        self.deferred = False
        self._writer: str | None = None  # whose fresh rows go in meanwhile
        # by key alone: a key written into any space after it was asked is noted there
        self._asked: set[str | bytes] = set()
        self._filled = not enabled  # documents held more than a first commit: never deferred
        self._before: set[tuple[int, str]] = set()  # (space id, cell ID) of the rows there before

    def open(self, conn: sqlite3.Connection) -> None:
        """At open: build an index a dead writer left out; one a live writer defers is
        left to it (reads scan meanwhile, writes wait in `after_other_writer`)."""
        if self._lock is not None and not index_present(conn) and self._lock.take_unowned(0):
            try:
                build(conn)
            finally:
                self._lock.give_unowned()

    @contextlib.contextmanager
    def deferring(self, conn: sqlite3.Connection, writer: str | None) -> Iterator[bool]:
        """Inside a commit's write transaction: whether this handle writes without the
        index, dropping it first when the commit is of fresh rows (`writer` theirs, None
        for any other), `documents` holds no more than a first commit and the lock is
        free. Should the transaction fail, the drop rolls back with it."""
        with self._guard:  # not held through the commit: `existing` runs beside it
            began = writer is not None and self._begin(conn, writer)
            deferred = self.deferred
        try:
            yield deferred
        except BaseException:
            if began:
                with self._guard:
                    self.deferred = False
                    self._lock.give_unowned()  # type: ignore[union-attr]
            raise

    def meets_before(self, space_id: int, cell_ids: Mapping[str, object]) -> bool:
        """Whether fresh rows (by cell ID) meet a row that was there before this handle
        dropped the index: SQLite cannot tell without it, so the store does (RowExists)."""
        return self.deferred and any(s == space_id and c in cell_ids for s, c in self._before)

    def accepts(self, writer: str) -> bool:
        """Whether fresh rows of `writer` go in without the index: those of the writer
        that began it (another's may meet its cells: the rules decide, with the index)."""
        return not self.deferred or writer == self._writer

    def _begin(self, conn: sqlite3.Connection, writer: str) -> bool:
        if self.deferred or self._filled:
            return False
        assert self._lock is not None
        if not self._lock.take_unowned(0):
            return False
        if not index_present(conn) or _filled(conn):
            self._lock.give_unowned()
            self._filled = True
            self._asked.clear()
            return False
        # the rows of the store's first commit (a target's index roots): its roots as far
        # as `existing` is concerned, and a fresh row meeting one takes the rules' path
        before = conn.execute("SELECT space_id, cell_id, value IS NOT NULL FROM documents").fetchall()
        self._before = {(space_id, cell(k)) for space_id, k, _ in before}
        conn.executemany("INSERT OR IGNORE INTO fresh_roots (space_id, cell_id) VALUES (?, ?)",
                         [(space_id, k) for space_id, k, live in before if live])
        conn.execute(f"DROP INDEX {KEY_INDEX}")
        self.deferred, self._writer = True, writer
        return True

    def end(self, conn: sqlite3.Connection) -> None:
        """Build the index if this handle deferred it, and give the lock back."""
        if not self.deferred:
            return
        # SQLite's write lock first, then the guard (a batch commit takes them in that
        # order), held through the COMMIT: no one reads fresh_roots emptied meanwhile
        conn.execute("BEGIN IMMEDIATE")
        with self._guard:
            try:
                deferred = self.deferred
                if deferred:
                    _build(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            if deferred:
                self.deferred = False
                self._filled = True
                self._asked.clear()
                self._before.clear()
                self._lock.give_unowned()  # type: ignore[union-attr]

    def after_other_writer(
        self, commit: Callable[[], int], connection: Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]],
        timeout: float, path: str,
    ) -> int:
        """`commit()`; when it finds the index absent (KeyIndexAbsent, rolled back):
        wait for the deferring writer's lock, build the index if still absent (its writer
        died), and commit again. StoreBusy when the writer keeps it past `timeout`."""
        while True:
            try:
                return commit()
            except KeyIndexAbsent:
                pass
            assert self._lock is not None
            if not self._lock.take_unowned(timeout):
                raise StoreBusy("store-busy", f"store {path} is busy with a first sync, which held its key "
                                f"index for more than {timeout:g} s; try again when it has finished")
            try:
                with connection() as conn:
                    build(conn)
            finally:
                self._lock.give_unowned()

    # the roots asked while deferred (or before: the first batch's)

    def roots_present(
        self, conn: sqlite3.Connection, space_id: Callable[[], int | None], keys: list[str | bytes]
    ) -> set[str | bytes] | None:
        """`existing(roots=True)`'s answer: the keys of the roots this handle wrote while
        deferred, the rest noted as asked; None when it does not defer (then the rows
        say, and a handle that may still defer notes what they lack)."""
        with self._guard:
            if self._filled:
                return None
            found_id = space_id()
            if not self.deferred:
                if found_id is not None and _filled(conn):
                    self._filled = True
                    self._asked.clear()
                    return None
                # an empty store: noted, as the first batch may defer
                self._asked.update(keys)
                return set() if found_id is None else None
            if found_id is None:
                self._asked.update(keys)
                return set()
            found = _fresh_roots(conn, found_id, keys)
            self._asked.update(k for k in keys if k not in found)
            return found

    def written(self, conn: sqlite3.Connection, space_id: int, keys: Iterable[str | bytes]) -> None:
        """In the transaction of fresh rows: the asked roots among them into fresh_roots."""
        with self._guard:
            if not self.deferred or not self._asked:
                return
            asked = self._asked
            roots = [k for k in keys if k in asked]
            asked.difference_update(roots)
        conn.executemany("INSERT OR IGNORE INTO fresh_roots (space_id, cell_id) VALUES (?, ?)",
                         ((space_id, k) for k in roots))


FIRST_COMMIT_ROWS = 16  # rows a store may hold and still be written as empty (its index roots)


def _filled(conn: sqlite3.Connection) -> bool:
    """Whether `documents` holds more than one commit of a few rows in each space (what a
    target's opening writes: its index roots, seq 1): then the key index stays."""
    count, top = conn.execute(
        f"SELECT count(*), max(seq) FROM (SELECT seq FROM documents LIMIT {FIRST_COMMIT_ROWS + 1})"
    ).fetchone()
    return count > FIRST_COMMIT_ROWS or (top or 0) > 1


def _fresh_roots(conn: sqlite3.Connection, space_id: int, keys: list[str | bytes]) -> set[str | bytes]:
    query = "SELECT cell_id FROM fresh_roots WHERE space_id = ? AND cell_id IN ({marks})"
    return {k for (k,) in rows_in_batches(conn, query, space_id, keys)}

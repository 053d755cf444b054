"""A shared store on PostgreSQL (psycopg 3): several machines, one space.

The same contract as the SQLite store (store.py), over the tables of
postgres_schema.py, which the store creates or migrates when it is opened.

Commits that write take the space's row lock (`SELECT ... FOR UPDATE` on
`fabric_spaces`) before reading the rows they check, so commits to one space
serialize across processes and machines, their sequence numbers never repeat, and
the rows resolve_commit sees are the latest committed ones (READ COMMITTED takes a
fresh snapshot per statement, after the lock is granted). Commits to other spaces do
not wait. A commit that writes nothing is checked in a REPEATABLE READ, READ ONLY
transaction: one snapshot, no lock, so readers never wait for writers.

Locks are advisory locks (postgres_locks.py); the change feed wakes waiters through
LISTEN/NOTIFY (postgres_changes.py). Threads: each thread has its own connection (a
psycopg connection runs one statement at a time); a forked child starts afresh and
never touches, nor closes, its parent's connections (closing one would end the
parent's session). Values are fvj1 JSON text, labels JSON, as in SQLite.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator

import psycopg

from lib.fabric import value_decoding
from lib.fabric.commit_rules import CommitPlan, Row, resolve_commit
from lib.fabric.documents import Document, Labels
from lib.fabric.postgres_changes import CHANNEL, ChangeListener
from lib.fabric.postgres_connect import connect, failure
from lib.fabric.postgres_locks import AdvisoryStoreLock
from lib.fabric.postgres_schema import ensure_schema
from lib.fabric.store import Store
from lib.fabric.store_errors import StoreError
from lib.fabric.store_lock import DEFAULT_TIMEOUT_SECONDS, OnWait, StoreLock
from lib.fabric.store_url import display_store_url
from lib.fabric.thread_connections import ThreadConnections

_BATCH = 1000  # IDs per `= ANY(...)` lookup
# How long a waiter sleeps between reads of the feed while notifications arrive: they
# are the signal; this only bounds how late a lost one is noticed.
PUSH_FALLBACK_SECONDS = 2.0

_UPSERT = """
INSERT INTO fabric_documents (space_id, cell_id, seq, labels, value)
SELECT %s, t.cell_id, %s, t.labels, t.value
FROM unnest(%b::text[], %b::text[], %b::text[]) AS t (cell_id, labels, value)
ON CONFLICT (space_id, cell_id) DO UPDATE SET
    seq = excluded.seq, labels = excluded.labels, value = excluded.value
"""


class PostgresStore(Store):
    """A Store in a PostgreSQL database, named by a `postgresql://` URL."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._where = display_store_url(url)
        self._threads: ThreadConnections[psycopg.Connection] = ThreadConnections(
            lambda: connect(url), usable=lambda conn: not conn.closed, on_fork=self._drop_listener
        )
        self._registry_lock = threading.Lock()
        self._space_ids: dict[str, int] = {}
        self._labels_cache: dict[str, Labels] = {}
        self._closed = False
        self._store_id: str | None = None
        self._listener: ChangeListener | None = None
        try:
            with self._connection() as conn:
                ensure_schema(conn, self._where)
        except BaseException:
            self.close()  # a refused store (a newer schema) leaves no session open
            raise

    def __repr__(self) -> str:
        return f"PostgresStore({self._where!r})"

    # connections

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        if self._closed:
            raise StoreError("store-closed", f"store {self._where} is closed")
        conn = self._threads.current()
        try:
            yield conn
        except psycopg.Error as exc:
            if conn.broken:  # the next call on this thread connects again
                self._threads.forget(conn)
                conn.close()
            raise failure(self._url, exc) from None

    def _drop_listener(self) -> None:
        """In a forked child: the parent's listener (its thread and session) is not ours."""
        self._listener = None

    def close(self) -> None:
        with self._registry_lock:
            self._closed = True
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        for conn in self._threads.take_all():
            conn.close()

    def lock(
        self,
        space: str,
        name: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        on_wait: OnWait | None = None,
    ) -> StoreLock:
        return AdvisoryStoreLock(self._url, space, name, timeout=timeout, on_wait=on_wait)

    # helpers

    def _space_id(self, conn: psycopg.Connection, space: str, create: bool = False) -> int | None:
        """The space's row id; `create` inserts the row first (in autocommit, outside
        any transaction, so a cached id never names a row that was rolled back)."""
        found = self._space_ids.get(space)
        if found is not None:
            return found
        if create:
            conn.execute(
                "INSERT INTO fabric_spaces (did) VALUES (%s) ON CONFLICT (did) DO NOTHING", (space,)
            )
        row = conn.execute("SELECT id FROM fabric_spaces WHERE did = %s", (space,)).fetchone()
        if row is None:
            return None
        self._space_ids[space] = row[0]
        return row[0]

    def _labels(self, text: str) -> Labels:
        labels = self._labels_cache.get(text)
        if labels is None:
            if len(self._labels_cache) > 1024:
                self._labels_cache.clear()
            labels = self._labels_cache[text] = Labels.from_json(text)
        return labels

    # reads

    def _read_row(self, space: str, cell_id: str) -> tuple[int, Document | None]:
        with self._connection() as conn:
            space_id = self._space_id(conn, space)
            if space_id is None:
                return 0, None
            row = conn.execute(
                "SELECT seq, labels, value FROM fabric_documents WHERE space_id = %s AND cell_id = %s",
                (space_id, cell_id),
            ).fetchone()
        if row is None:
            return 0, None
        seq, labels, text = row
        if text is None:
            return seq, None
        return seq, Document(value_decoding.loads(text), self._labels(labels), seq)

    def _read_version(self, space: str, cell_id: str) -> int:
        with self._connection() as conn:
            space_id = self._space_id(conn, space)
            if space_id is None:
                return 0
            row = conn.execute(
                "SELECT seq FROM fabric_documents WHERE space_id = %s AND cell_id = %s",
                (space_id, cell_id),
            ).fetchone()
        return 0 if row is None else row[0]

    def iter_many(
        self, space: str, cell_ids: Iterable[str], *, keep_fields: frozenset[str] = frozenset()
    ) -> Iterator[tuple[str, Document]]:
        # one query per batch; a batch is fetched whole before the first yield
        unique = list(dict.fromkeys(cell_ids))
        with self._connection() as conn:
            space_id = self._space_id(conn, space)
        if space_id is None:
            return
        for start in range(0, len(unique), _BATCH):
            batch = unique[start : start + _BATCH]
            with self._connection() as conn:
                rows = conn.execute(
                    "SELECT cell_id, seq, labels, value FROM fabric_documents "
                    "WHERE space_id = %s AND cell_id = ANY(%b::text[]) AND value IS NOT NULL",
                    (space_id, batch),
                ).fetchall()
            found = {cell_id: (seq, labels, text) for cell_id, seq, labels, text in rows}
            del rows
            for cell_id in batch:
                row = found.pop(cell_id, None)
                if row is not None:
                    seq, labels, text = row
                    yield cell_id, Document(value_decoding.loads(text, keep_fields), self._labels(labels), seq)

    def head(self, space: str) -> int:
        with self._connection() as conn:
            row = conn.execute("SELECT head FROM fabric_spaces WHERE did = %s", (space,)).fetchone()
        return row[0] if row else 0

    def changes_since(self, space: str, seq: int) -> list[tuple[str, int]]:
        with self._connection() as conn:
            space_id = self._space_id(conn, space)
            if space_id is None:
                return []
            rows = conn.execute(
                "SELECT cell_id, seq FROM fabric_documents WHERE space_id = %s AND seq > %s "
                "ORDER BY seq, cell_id",
                (space_id, seq),
            ).fetchall()
        return [(cell_id, row_seq) for cell_id, row_seq in rows]

    def wait_for_change(
        self, space: str, seen: int, timeout: float, wake: threading.Event
    ) -> None:
        """Return when a commit to the space is notified, `wake` is set, or the
        fallback interval passes; polls every `timeout` while not listening."""
        with self._registry_lock:
            if self._listener is None and not self._closed:
                self._listener = ChangeListener(self._url)
            listener = self._listener
        if listener is None:
            wake.wait(timeout)
            return
        listener.start()
        # registered even while not yet listening: the listener wakes every registered
        # waiter when it starts listening, so none sleeps on through that moment
        listener.register(space, wake)
        try:
            if self.head(space) != seen:  # committed before we registered
                return
            wake.wait(max(timeout, PUSH_FALLBACK_SECONDS) if listener.listening else timeout)
        finally:
            listener.unregister(space, wake)

    # writes

    def store_id(self) -> str:
        """A random id made once per database (kept in its meta table)."""
        if self._store_id is None:
            with self._connection() as conn:
                conn.execute(
                    "INSERT INTO fabric_meta (key, value) VALUES ('storeId', %s) "
                    "ON CONFLICT (key) DO NOTHING",
                    (uuid.uuid4().hex,),
                )
                (value,) = conn.execute(
                    "SELECT value FROM fabric_meta WHERE key = 'storeId'"
                ).fetchone()
            self._store_id = f"postgresql:{value}"
        return self._store_id

    def next_sequence(self, space: str, name: str) -> int:
        with self._connection() as conn:
            space_id = self._space_id(conn, space, create=True)
            (value,) = conn.execute(
                "INSERT INTO fabric_sequences (space_id, name, value) VALUES (%s, %s, 1) "
                "ON CONFLICT (space_id, name) DO UPDATE SET value = fabric_sequences.value + 1 "
                "RETURNING value",
                (space_id, name),
            ).fetchone()
        return value

    def sequences(self, space: str) -> dict[str, int]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT q.name, q.value FROM fabric_sequences q "
                "JOIN fabric_spaces s ON s.id = q.space_id WHERE s.did = %s",
                (space,),
            ).fetchall()
        return dict(rows)

    def advance_sequence(self, space: str, name: str, value: int) -> None:
        with self._connection() as conn:
            space_id = self._space_id(conn, space, create=True)
            conn.execute(
                "INSERT INTO fabric_sequences (space_id, name, value) VALUES (%s, %s, %s) "
                "ON CONFLICT (space_id, name) DO UPDATE SET "
                "value = greatest(fabric_sequences.value, excluded.value)",
                (space_id, name, value),
            )

    def _commit(self, plan: CommitPlan) -> int:
        if not plan.ops:
            return self._check(plan)
        with self._connection() as conn:
            space_id = self._space_id(conn, plan.space, create=True)
            with conn.transaction():
                (head,) = conn.execute(
                    "SELECT head FROM fabric_spaces WHERE id = %s FOR UPDATE", (space_id,)
                ).fetchone()
                rows = self._rows(conn, space_id, plan.cells())
                writes = resolve_commit(plan, rows, _text_loader(conn, space_id))
                if not writes:
                    return head
                seq = head + 1
                label_texts: dict[Labels, str] = {}
                conn.execute(_UPSERT, (
                    space_id, seq,
                    [w.cell_id for w in writes],
                    [_text_of(label_texts, w.labels) for w in writes],
                    [w.text for w in writes],
                ))
                conn.execute("UPDATE fabric_spaces SET head = %s WHERE id = %s", (seq, space_id))
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, plan.space))
        return seq

    def _check(self, plan: CommitPlan) -> int:
        """A plan that writes nothing: its checks against one snapshot, taking no lock."""
        with self._connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            row = conn.execute(
                "SELECT id, head FROM fabric_spaces WHERE did = %s", (plan.space,)
            ).fetchone()
            if row is None:  # nothing was ever written: every read saw version 0
                resolve_commit(plan, {}, _text_loader(conn, -1))
                return 0
            space_id, head = row
            resolve_commit(plan, self._rows(conn, space_id, plan.cells()), _text_loader(conn, space_id))
        return head

    def _rows(self, conn: psycopg.Connection, space_id: int, cells: set[str]) -> dict[str, Row]:
        ids = list(cells)
        rows: dict[str, Row] = {}
        for start in range(0, len(ids), _BATCH):
            for cell_id, seq, labels, live in conn.execute(
                "SELECT cell_id, seq, labels, value IS NOT NULL FROM fabric_documents "
                "WHERE space_id = %s AND cell_id = ANY(%b::text[])",
                (space_id, ids[start : start + _BATCH]),
            ):
                rows[cell_id] = Row(seq, self._labels(labels), bool(live))
        return rows


def _text_loader(conn: psycopg.Connection, space_id: int) -> Callable[[str], str]:
    """The stored text of a live cell, for resolve_commit's patches and hash checks."""

    def load_text(cell_id: str) -> str:
        (text,) = conn.execute(
            "SELECT value FROM fabric_documents WHERE space_id = %s AND cell_id = %s",
            (space_id, cell_id),
        ).fetchone()
        return text

    return load_text


def _text_of(cache: dict[Labels, str], labels: Labels) -> str:
    text = cache.get(labels)
    if text is None:
        text = cache[labels] = labels.to_json()
    return text

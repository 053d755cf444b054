"""How the SQLite store opens a connection, runs a transaction on it, checks the file's
schema, and names a failure (moved out of sqlite_store.py, which keeps the reads and
writes).

Each connection: autocommit mode (the store issues BEGIN and COMMIT itself), usable from
the thread that closes it, SQLite's busy timeout at the store's, and for a file
`synchronous = FULL` (a commit, a command claim or a receipt, survives power loss too),
a page cache of CACHE_KIB and a WAL size limit. `journal_mode = WAL` is the file's own,
set once when its schema is created.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from lib.fabric.sqlite_schema import SCHEMA, SCHEMA_VERSION, migrate, schema_version, statements
from lib.fabric.store_errors import StoreBusy, StoreError

WAL_LIMIT_BYTES = 16 * 2**20
CACHE_KIB = 4 * 1024  # SQLite's page cache per connection (a bound on memory, too)


def connect(path: str, busy_timeout: float, *, memory: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path,
        timeout=busy_timeout,
        isolation_level=None,  # we issue BEGIN/COMMIT ourselves
        check_same_thread=False,  # close() may run on another thread
    )
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    if not memory:
        # per connection (journal_mode=WAL is the file's, set when it is created).
        # FULL: a commit (a command claim, a receipt) survives power loss too
        conn.execute("PRAGMA synchronous = FULL")
        # a batch of sessions' graphs touches many pages: the default 2 MB cache
        # spilled them mid-transaction (pages are taken as needed, up to this)
        conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        # a batch commit grows the -wal file; once checkpointed it shrinks back to this
        conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")
    return conn


IN_BATCH = 500  # keys per IN (...) query, well under SQLite's variable limit


def rows_in_batches(conn: sqlite3.Connection, query: str, space_id: int,
                    stored_keys: Sequence[str | bytes]) -> Iterator[tuple[Any, ...]]:
    """The rows of `query` (`?` for the space id, then `{marks}` where the keys' IN list
    goes) for `stored_keys`, IN_BATCH keys a query, each batch fetched whole."""
    for start in range(0, len(stored_keys), IN_BATCH):
        batch = stored_keys[start : start + IN_BATCH]
        yield from conn.execute(query.format(marks=",".join("?" * len(batch))), (space_id, *batch)).fetchall()


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> Iterator[None]:
    """A transaction: BEGIN IMMEDIATE takes the write lock; a plain BEGIN only reads."""
    conn.execute(begin)
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def initialize(conn: sqlite3.Connection, path: str, *, memory: bool,
               notice: Callable[[str], None] | None = None) -> None:
    """Check the schema version by reading; create the schema (and switch the file
    to WAL, which persists in the file) only when it is missing. A file of an older
    version is migrated, said first to `notice` (a large store's rows are copied)."""
    version = schema_version(conn)
    if version is None:
        if not memory:
            conn.execute("PRAGMA journal_mode = WAL")
        with write_transaction(conn):
            for statement in statements(SCHEMA):
                conn.execute(statement)
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schemaVersion', ?)",
                (str(SCHEMA_VERSION),),
            )
        version = schema_version(conn)
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            "store-schema-too-new",
            f"store {path} has schema version {version}, newer than this "
            f"agentctl understands ({SCHEMA_VERSION}); upgrade agentctl",
        )
    if version is not None and version < SCHEMA_VERSION:
        # once per file: the first opener migrates it under the write lock, and an
        # opener that waited for it finds it done
        with write_transaction(conn):
            current = schema_version(conn)
            if current is not None and current < SCHEMA_VERSION:
                if notice is not None:
                    notice(f"agentctl: upgrading store {path} from schema version {current} to "
                           f"{SCHEMA_VERSION} (once; a large store takes a minute)")
                migrate(conn, current)


def failure(path: str, busy_timeout: float, exc: sqlite3.Error) -> StoreError:
    """The store error an sqlite3 error stands for."""
    reason = exc.args[0] if exc.args else type(exc).__name__
    if is_busy(exc):
        return StoreBusy("store-busy",
            f"store {path} is busy with another writer, which held its write "
            f"lock for more than {busy_timeout:g} s; try again when it has finished"
        )
    return StoreError("store-unavailable", f"store {path} failed: {reason}")


def is_busy(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED (extended codes included): another connection holds
    a lock this one needed for longer than the busy timeout."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)

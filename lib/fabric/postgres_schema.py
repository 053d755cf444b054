"""The PostgreSQL store's schema, its version, and how it is created or migrated.

The tables mirror the SQLite store's (sqlite_schema.py), prefixed `fabric_` so a
database shared with other applications stays readable:

    fabric_meta          key/value: schemaVersion, storeId
    fabric_spaces        a DID and its head sequence (the row commits lock)
    fabric_documents     one row per cell: seq, labels JSON, fvj1 value text (NULL once
                         deleted; the row stays so the change feed reports the delete)
    fabric_sequences     named counters per space
    fabric_lock_holders  the note each advisory-lock holder leaves (postgres_locks.py)

Cell IDs are compared bytewise (`COLLATE "C"`), as SQLite compares them, so the change
feed's order (seq, then ID) is the same on both backends whatever the database's locale.

Whoever opens the store first creates the schema, under a transaction-level advisory
lock so two processes opening a new database at once do not race. A store whose schema
is newer than this code is refused (`store-schema-too-new`); an older one is migrated
by the steps in `_MIGRATIONS` (none yet: version 1 is the first).
"""

from __future__ import annotations

import psycopg

from lib.fabric.store_errors import StoreError

SCHEMA_VERSION = 1

# pg_advisory_xact_lock key guarding schema creation ("agentctl" in ASCII, as a number)
_SCHEMA_LOCK_KEY = 0x6167656E7463746C

SCHEMA = [
    "CREATE TABLE IF NOT EXISTS fabric_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS fabric_spaces (
        id BIGSERIAL PRIMARY KEY,
        did TEXT NOT NULL UNIQUE,
        head BIGINT NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE IF NOT EXISTS fabric_documents (
        space_id BIGINT NOT NULL REFERENCES fabric_spaces (id),
        cell_id TEXT COLLATE "C" NOT NULL,
        seq BIGINT NOT NULL,
        labels TEXT NOT NULL,
        value TEXT,
        PRIMARY KEY (space_id, cell_id)
    )""",
    "CREATE INDEX IF NOT EXISTS fabric_documents_by_seq ON fabric_documents (space_id, seq)",
    """CREATE TABLE IF NOT EXISTS fabric_sequences (
        space_id BIGINT NOT NULL REFERENCES fabric_spaces (id),
        name TEXT NOT NULL,
        value BIGINT NOT NULL,
        PRIMARY KEY (space_id, name)
    )""",
    """CREATE TABLE IF NOT EXISTS fabric_lock_holders (
        key BIGINT PRIMARY KEY,
        backend_pid INTEGER NOT NULL,
        note TEXT NOT NULL
    )""",
]

# version -> statements taking a store from that version to the next
_MIGRATIONS: dict[int, list[str]] = {}


def schema_version(conn: psycopg.Connection) -> int | None:
    """The database's schema version; None when it has no schema yet."""
    (table,) = conn.execute("SELECT to_regclass('fabric_meta')").fetchone()
    if table is None:
        return None
    row = conn.execute("SELECT value FROM fabric_meta WHERE key = 'schemaVersion'").fetchone()
    return int(row[0]) if row is not None else None


def ensure_schema(conn: psycopg.Connection, where: str) -> None:
    """Create or migrate the schema (conn in autocommit mode); refuse a newer one."""
    version = schema_version(conn)
    if version is None or version < SCHEMA_VERSION:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_signed(_SCHEMA_LOCK_KEY),))
            version = schema_version(conn)  # another process may have done it meanwhile
            if version is None:
                for statement in SCHEMA:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO fabric_meta (key, value) VALUES ('schemaVersion', %s) "
                    "ON CONFLICT (key) DO NOTHING",
                    (str(SCHEMA_VERSION),),
                )
            else:
                while version < SCHEMA_VERSION:
                    for statement in _MIGRATIONS[version]:
                        conn.execute(statement)
                    version += 1
                conn.execute(
                    "UPDATE fabric_meta SET value = %s WHERE key = 'schemaVersion'",
                    (str(SCHEMA_VERSION),),
                )
        version = schema_version(conn)
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            "store-schema-too-new",
            f"store {where} has schema version {version}, newer than this agentctl "
            f"understands ({SCHEMA_VERSION}); upgrade agentctl",
        )


def _signed(key: int) -> int:
    """A 64-bit key as PostgreSQL's signed bigint."""
    return key - (1 << 64) if key >= 1 << 63 else key

"""The embedded store's SQLite schema and its version.

One `meta` table (schemaVersion, storeId), `spaces` (a DID and its head sequence),
`documents` (one row per cell: seq, labels, fvj1 value text; a deleted cell keeps its
row with a NULL value) and named `sequences` per space.
"""

from __future__ import annotations

import sqlite3

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS spaces (
    id INTEGER PRIMARY KEY,
    did TEXT NOT NULL UNIQUE,
    head INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS documents (
    space_id INTEGER NOT NULL REFERENCES spaces (id),
    cell_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    labels TEXT NOT NULL,
    value TEXT,  -- last, so reading the columns before it never loads a big value
    PRIMARY KEY (space_id, cell_id)
);
CREATE INDEX IF NOT EXISTS documents_by_seq ON documents (space_id, seq);
CREATE TABLE IF NOT EXISTS sequences (
    space_id INTEGER NOT NULL REFERENCES spaces (id),
    name TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (space_id, name)
);
"""

UPSERT = (
    "INSERT INTO documents (space_id, cell_id, seq, labels, value) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (space_id, cell_id) DO UPDATE SET "
    "seq = excluded.seq, labels = excluded.labels, value = excluded.value"
)


def schema_version(conn: sqlite3.Connection) -> int | None:
    """The file's schema version; None when it has no schema yet."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schemaVersion'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return int(row[0]) if row is not None else None

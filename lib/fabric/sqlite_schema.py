"""The embedded store's SQLite schema, its version, and the migration of older files.

One `meta` table (schemaVersion, storeId), `spaces` (a DID and its head sequence),
`labels` (each distinct labels JSON once, by id), `documents` (one row per cell: its ID
as cell_keys.py keeps it, seq, labels id, stored value; a deleted cell keeps its row
with a NULL value) and named
`sequences` per space. A stored value is fvj1 text as stored_values.py keeps it: TEXT,
or a zlib BLOB.

Version 3 holds the documents' key, one row per (space, cell), in a named unique index
(`documents_by_cell`) instead of the table's inline primary key, which SQLite cannot
drop: a first sync into an empty store inserts its rows without it and builds it once
at the end (sqlite_key_index.py). `fresh_roots` is empty but while that runs: the graph
roots it wrote, so `Store.existing(roots=True)` is answered without the key index.

Version 1 kept each document's labels JSON in the row itself (a `labels` TEXT column)
and values always as plain fvj1 TEXT. `migrate` turns a version 1 file into version 2
in one transaction when the store opens it: the labels move to the `labels` table, cell
IDs take their short form, the values stay as they are (version 1 text reads back
unchanged). Version 2 -> 3 copies the documents into a table keyed by the named index.
"""

from __future__ import annotations

import sqlite3

from lib.fabric import cell_keys

SCHEMA_VERSION = 3
KEY_INDEX = "documents_by_cell"  # the documents' unique key (space_id, cell_id)

# value: TEXT or BLOB (stored_values.py), last: reading the columns before it never loads it
_DOCUMENT_COLUMNS = """
    space_id INTEGER NOT NULL REFERENCES spaces (id),
    cell_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    labels_id INTEGER NOT NULL REFERENCES labels (id),
    value"""
_FRESH_ROOTS = """CREATE TABLE IF NOT EXISTS fresh_roots (
    space_id INTEGER NOT NULL,
    cell_id NOT NULL,
    PRIMARY KEY (space_id, cell_id)
) WITHOUT ROWID"""

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS spaces (
    id INTEGER PRIMARY KEY,
    did TEXT NOT NULL UNIQUE,
    head INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY,
    json TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS documents ({_DOCUMENT_COLUMNS});
CREATE UNIQUE INDEX IF NOT EXISTS documents_by_cell ON documents (space_id, cell_id);
CREATE INDEX IF NOT EXISTS documents_by_seq ON documents (space_id, seq);
{_FRESH_ROOTS};
CREATE TABLE IF NOT EXISTS sequences (
    space_id INTEGER NOT NULL REFERENCES spaces (id),
    name TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (space_id, name)
);
"""

# Rows for cells that have none (a conflict is an IntegrityError: sqlite_store's fresh
# rows), from one statement (sqlite_rows_out.py's `insert_fresh`): SQLite runs a
# whole batch with the GIL released once, where executemany takes the GIL back after every
# row. The rows' bytes come in four parameters: ?4 the stored IDs and ?6 the stored
# values, each concatenated (text as UTF-8); ?5 and ?7 each row's end in them, ?9 its
# labels id, as NUMBER_WIDTH-digit decimals; ?8 two bytes a row, the ID's kind then the
# value's (b BLOB, t TEXT, n NULL). Each row starts where the one before ended; the
# recursive CTE yields them in order (row n, where its ID and value start and end).
NUMBER_WIDTH = 19  # digits of any 64-bit row number
INSERT_MANY = f"""
WITH RECURSIVE r (n, k0, k1, v0, v1) AS (
    SELECT 0, 0, CAST(substr(?5, 1, {NUMBER_WIDTH}) AS INTEGER), 0, CAST(substr(?7, 1, {NUMBER_WIDTH}) AS INTEGER)
    UNION ALL
    SELECT n + 1, k1, CAST(substr(?5, (n + 1) * {NUMBER_WIDTH} + 1, {NUMBER_WIDTH}) AS INTEGER),
           v1, CAST(substr(?7, (n + 1) * {NUMBER_WIDTH} + 1, {NUMBER_WIDTH}) AS INTEGER)
    FROM r WHERE n + 1 < ?3
)
INSERT INTO documents (space_id, cell_id, seq, labels_id, value)
SELECT ?1,
    CASE substr(?8, n * 2 + 1, 1) WHEN X'62' THEN substr(?4, k0 + 1, k1 - k0)
        ELSE CAST(substr(?4, k0 + 1, k1 - k0) AS TEXT) END,
    ?2,
    CAST(substr(?9, n * {NUMBER_WIDTH} + 1, {NUMBER_WIDTH}) AS INTEGER),
    CASE substr(?8, n * 2 + 2, 1) WHEN X'62' THEN substr(?6, v0 + 1, v1 - v0)
        WHEN X'74' THEN CAST(substr(?6, v0 + 1, v1 - v0) AS TEXT) END
FROM r
"""
UPSERT = (
    "INSERT INTO documents (space_id, cell_id, seq, labels_id, value) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (space_id, cell_id) DO UPDATE SET "
    "seq = excluded.seq, labels_id = excluded.labels_id, value = excluded.value"
)
# UPSERT of a value as zeros of the length bound last (sqlite_rows_out.py writes it then)
UPSERT_ZEROS = UPSERT.replace("?, ?, ?, ?, ?)", "?, ?, ?, ?, zeroblob(?))")

# Version 1 -> 2: the labels JSON of every row moves to the labels table; the rows are
# copied into the new documents table (SQLite cannot change a column in place).
_FROM_1 = f"""
CREATE TABLE labels (id INTEGER PRIMARY KEY, json TEXT NOT NULL UNIQUE);
INSERT OR IGNORE INTO labels (json) SELECT DISTINCT labels FROM documents;
ALTER TABLE documents RENAME TO documents_v1;
DROP INDEX IF EXISTS documents_by_seq;
CREATE TABLE documents ({_DOCUMENT_COLUMNS},
    PRIMARY KEY (space_id, cell_id)
);
INSERT INTO documents (space_id, cell_id, seq, labels_id, value)
    SELECT d.space_id, cell_key(d.cell_id), d.seq, l.id, d.value
    FROM documents_v1 AS d JOIN labels AS l ON l.json = d.labels;
DROP TABLE documents_v1;
CREATE INDEX documents_by_seq ON documents (space_id, seq);
UPDATE meta SET value = '2' WHERE key = 'schemaVersion'
"""

# Version 2 -> 3: the key becomes the named index (the inline primary key cannot be
# dropped, so the rows are copied, in key order: the new index is written in one pass).
_FROM_2 = f"""
ALTER TABLE documents RENAME TO documents_v2;
DROP INDEX IF EXISTS documents_by_seq;
CREATE TABLE documents ({_DOCUMENT_COLUMNS});
INSERT INTO documents (space_id, cell_id, seq, labels_id, value)
    SELECT space_id, cell_id, seq, labels_id, value FROM documents_v2 ORDER BY space_id, cell_id;
DROP TABLE documents_v2;
CREATE UNIQUE INDEX documents_by_cell ON documents (space_id, cell_id);
CREATE INDEX documents_by_seq ON documents (space_id, seq);
{_FRESH_ROOTS};
UPDATE meta SET value = '3' WHERE key = 'schemaVersion'
"""

MIGRATIONS = {1: _FROM_1, 2: _FROM_2}


def statements(script: str) -> list[str]:
    return [s for s in script.split(";") if s.strip()]


def migrate(conn: sqlite3.Connection, version: int) -> None:
    """Bring a file at `version` to SCHEMA_VERSION; the caller holds the write lock."""
    conn.create_function("cell_key", 1, cell_keys.key, deterministic=True)
    while version < SCHEMA_VERSION:
        for statement in statements(MIGRATIONS[version]):
            conn.execute(statement)
        version += 1


def schema_version(conn: sqlite3.Connection) -> int | None:
    """The file's schema version; None when it has no schema yet."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schemaVersion'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return int(row[0]) if row is not None else None

"""A store file of schema version 1 (labels JSON in every row, plain fvj1 text) opens,
is migrated once to version 2, and keeps every document, head and sequence."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lib.fabric import values
from lib.fabric.sqlite_schema import SCHEMA_VERSION
from lib.fabric.sqlite_store import SQLiteStore
from lib.fabric.store import Labels
from lib.fabric.values import Link
from tests.fabric.store_contract import ME, SPACE, A, B, C, put

# The version 1 schema as agentctl wrote it before schema version 2.
V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE spaces (id INTEGER PRIMARY KEY, did TEXT NOT NULL UNIQUE, head INTEGER NOT NULL DEFAULT 0);
CREATE TABLE documents (
    space_id INTEGER NOT NULL REFERENCES spaces (id),
    cell_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    labels TEXT NOT NULL,
    value TEXT,
    PRIMARY KEY (space_id, cell_id)
);
CREATE INDEX documents_by_seq ON documents (space_id, seq);
CREATE TABLE sequences (
    space_id INTEGER NOT NULL REFERENCES spaces (id),
    name TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (space_id, name)
);
"""

MINE = Labels((ME,), (ME,))
SHARED = Labels((ME, "did:key:z6MkOther"), (ME,))
BIG = {"text": "a long line of words " * 200, "link": Link(A, SPACE)}


def _old_store(path: Path, schema: str, version: int, documents: list[tuple], labels: list[tuple] = ()) -> None:
    """A file of an older schema: store id abc, SPACE at head 3, its rows, a sequence."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(schema)
    conn.execute("INSERT INTO meta VALUES ('schemaVersion', ?), ('storeId', 'abc')", (str(version),))
    conn.execute("INSERT INTO spaces (id, did, head) VALUES (1, ?, 3)", (SPACE,))
    if labels:
        conn.executemany("INSERT INTO labels (id, json) VALUES (?, ?)", labels)
    conn.executemany("INSERT INTO documents VALUES (1, ?, ?, ?, ?)", documents)
    conn.execute("INSERT INTO sequences VALUES (1, 'observation', 7)")
    conn.commit()
    conn.close()


def _v1_store(path: Path) -> None:
    rows = [
        (A, 1, MINE, values.dumps({"n": 1, "link": Link(B, SPACE)})),
        (B, 2, SHARED, values.dumps(BIG)),
        (C, 3, MINE, None),  # deleted
    ]
    _old_store(path, V1_SCHEMA, 1, [(cell, seq, labels.to_json(), text) for cell, seq, labels, text in rows])


def test_a_version_1_store_is_migrated_when_opened_and_keeps_every_document(tmp_path):
    path = tmp_path / "fabric.db"
    _v1_store(path)
    with SQLiteStore(path) as store:
        assert store.head(SPACE) == 3
        a, b = store.read(SPACE, A), store.read(SPACE, B)
        assert (a.value, a.labels, a.seq) == ({"n": 1, "link": Link(B, SPACE)}, MINE, 1)
        assert (b.value, b.labels, b.seq) == (BIG, SHARED, 2)
        assert store.read(SPACE, C) is None
        assert store.changes_since(SPACE, 0) == [(A, 1), (B, 2), (C, 3)]
        assert store.store_id() == "sqlite:abc"
        assert store.next_sequence(SPACE, "observation") == 8
        # and it keeps working: writes, patches of old rows, deleted cells' labels
        assert put(store, A, {"n": 2}) == 4
        with store.transaction(SPACE, ME) as tx:
            tx.patch(B, set={"more": True})
            tx.commit()
        assert store.read(SPACE, B).value == {**BIG, "more": True}
        assert store.read(SPACE, B).labels == SHARED
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schemaVersion'").fetchone() == (str(SCHEMA_VERSION),)
    assert conn.execute("SELECT count(*) FROM labels").fetchone() == (2,)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'documents_v1'").fetchone() == (0,)
    conn.close()


def test_a_migrated_store_opens_again_without_migrating(tmp_path, traced):
    path = tmp_path / "fabric.db"
    _v1_store(path)
    SQLiteStore(path).close()
    traced.clear()  # count from the second opening
    with SQLiteStore(path) as store:
        assert store.read(SPACE, A).value["n"] == 1
    assert traced  # the trace saw the opening
    assert not [s for s in traced if "BEGIN" in s or "RENAME" in s or "INSERT" in s]


def test_each_distinct_labels_set_is_stored_once(tmp_path):
    with SQLiteStore(tmp_path / "f.db") as store:
        with store.transaction(SPACE, ME) as tx:
            for i in range(50):
                tx.write(f"of:cell{i}", i, MINE if i % 2 else SHARED)
            tx.commit()
        put(store, "of:more", 1, labels=MINE)
    conn = sqlite3.connect(tmp_path / "f.db")
    assert conn.execute("SELECT count(*) FROM labels").fetchone() == (2,)
    assert conn.execute("SELECT count(DISTINCT labels_id) FROM documents").fetchone() == (2,)
    conn.close()


# The version 2 schema as agentctl wrote it before schema version 3 (the key inline):
# version 1's, the labels by id in their own table.
V2_SCHEMA = V1_SCHEMA.replace(
    "    labels TEXT NOT NULL,\n    value TEXT,", "    labels_id INTEGER NOT NULL REFERENCES labels (id),\n    value,"
) + "CREATE TABLE labels (id INTEGER PRIMARY KEY, json TEXT NOT NULL UNIQUE);\n"
assert "labels_id" in V2_SCHEMA


def _v2_store(path: Path) -> None:
    """A version 2 file: a content ID kept as its 32-byte BLOB, a compressed value, a
    deleted cell, two labels sets."""
    from lib.fabric import stored_values
    from lib.fabric.cell_keys import key

    _old_store(path, V2_SCHEMA, 2, [
        (key(A), 1, 1, stored_values.encode(values.dumps({"n": 1, "link": Link(B, SPACE)}), SPACE)),
        (key(B), 2, 2, stored_values.encode(values.dumps(BIG), SPACE)),
        (key(C), 3, 1, None),
    ], labels=[(1, MINE.to_json()), (2, SHARED.to_json())])


def test_a_version_2_store_is_migrated_to_the_named_key_index_and_keeps_every_document(tmp_path):
    path = tmp_path / "fabric.db"
    _v2_store(path)
    with SQLiteStore(path) as store:
        a, b = store.read(SPACE, A), store.read(SPACE, B)
        assert (a.value, a.labels, a.seq) == ({"n": 1, "link": Link(B, SPACE)}, MINE, 1)
        assert (b.value, b.labels, b.seq) == (BIG, SHARED, 2)
        assert store.read(SPACE, C) is None and store.existing(SPACE, [A, B, C]) == {A, B}
        assert store.changes_since(SPACE, 0) == [(A, 1), (B, 2), (C, 3)]
        assert store.store_id() == "sqlite:abc" and store.next_sequence(SPACE, "observation") == 8
        assert put(store, A, {"n": 2}) == 4  # the UPSERT's conflict target is the named index
        assert store.read(SPACE, A).value == {"n": 2}
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schemaVersion'").fetchone() == (str(SCHEMA_VERSION),)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("SELECT count(*) FROM documents").fetchone() == (3,)
    indexes = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"documents_by_cell", "documents_by_seq"} <= indexes
    assert not [n for n in indexes if n.startswith("sqlite_autoindex_documents")]  # no inline key left
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'documents_v2'").fetchone() == (0,)
    conn.close()


def test_a_migration_is_announced_once_to_the_stores_notice(tmp_path):
    path = tmp_path / "fabric.db"
    _v2_store(path)
    said: list[str] = []
    with SQLiteStore(path, notice=said.append):
        pass
    with SQLiteStore(path, notice=said.append):  # migrated already: nothing to say
        pass
    assert [line for line in said if "upgrading" in line] == [f"agentctl: upgrading store {path} from schema version 2 to {SCHEMA_VERSION} "
                    "(once; a large store takes a minute)"]

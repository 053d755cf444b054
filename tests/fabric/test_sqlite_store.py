"""SQLiteStore: the store contract, plus what is particular to one SQLite file."""

from __future__ import annotations

import sqlite3
import stat

import pytest

from lib.fabric.sqlite_schema import SCHEMA_VERSION
from lib.fabric.sqlite_store import SQLiteStore
from lib.fabric.store import open_store
from lib.fabric.store_errors import StoreBusy, StoreError
from tests.fabric.store_contract import ME, SPACE, StoreContract, put, value_of


class TestSQLiteStoreContract(StoreContract):
    @pytest.fixture
    def store_url(self, tmp_path):
        return f"sqlite:///{tmp_path}/state/fabric.db"

    @pytest.fixture
    def store(self, store_url):
        store = open_store(store_url)
        yield store
        store.close()


def test_the_store_file_and_its_new_directories_are_private(tmp_path):
    path = tmp_path / "deep" / "state" / "fabric.db"
    with SQLiteStore(path) as store:
        put(store, "of:x", 1)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        for sidecar in path.parent.glob("fabric.db-*"):
            assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600


def test_the_store_file_is_switched_to_write_ahead_logging_once_when_created(tmp_path, traced):
    import threading

    with SQLiteStore(tmp_path / "f.db"):
        pass
    assert sum("journal_mode" in s for s in traced) == 1  # the trace sees the pragma
    conn = sqlite3.connect(tmp_path / "f.db")
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()
    traced.clear()
    with SQLiteStore(tmp_path / "f.db") as again:  # a second store, then a second thread
        put(again, "of:x", 1)
        thread = threading.Thread(target=lambda: put(again, "of:y", 2))
        thread.start()
        thread.join()
    assert sum("synchronous" in s for s in traced) == 2  # two connections were traced
    assert [s for s in traced if "journal_mode" in s] == []
    assert [s for s in traced if "CREATE" in s.upper()] == []  # nor the schema again


def test_values_are_stored_as_fvj1_json_text(tmp_path):
    from lib.hashing import UNDEFINED

    with SQLiteStore(tmp_path / "f.db") as store:
        put(store, "of:x", {"a": UNDEFINED, "b": [1]})
    conn = sqlite3.connect(tmp_path / "f.db")
    assert conn.execute("SELECT value FROM documents").fetchone() == (
        '{"a":{"/Undefined@1":null},"b":[1]}',
    )
    conn.close()


def test_a_store_written_by_a_newer_schema_is_refused_with_a_clear_error(tmp_path):
    path = tmp_path / "f.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE meta SET value = ? WHERE key = 'schemaVersion'", (str(SCHEMA_VERSION + 1),)
    )
    conn.commit()
    conn.close()
    with pytest.raises(StoreError) as caught:
        SQLiteStore(path)
    assert caught.value.code == "store-schema-too-new"
    assert str(path) in caught.value.message and "upgrade agentctl" in caught.value.message


def test_an_in_memory_store_is_shared_by_the_threads_of_one_store():
    import threading

    with open_store("sqlite:///:memory:") as store:
        put(store, "of:x", 1)
        seen = []
        thread = threading.Thread(target=lambda: seen.append(value_of(store, "of:x")))
        thread.start()
        thread.join()
        assert seen == [1]


def test_a_closed_store_refuses_further_use(tmp_path):
    store = SQLiteStore(tmp_path / "f.db")
    store.close()
    with pytest.raises(StoreError) as caught:
        store.head(SPACE)
    assert caught.value.code == "store-closed"


def test_a_writer_holding_the_lock_past_the_busy_timeout_is_reported_as_busy(tmp_path):
    path = tmp_path / "f.db"
    store = SQLiteStore(path, busy_timeout=0.05)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreBusy) as caught:
            put(store, "of:x", 1)
        assert caught.value.code == "store-busy"
        assert "busy with another writer" in caught.value.message
        assert "try again" in caught.value.message
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    put(store, "of:x", 2)
    assert value_of(store, "of:x") == 2
    store.close()


@pytest.mark.parametrize(
    "url, code",
    [
        ("mysql://db/fabric", "store-url-unsupported"),
        ("fabric.db", "store-url-unsupported"),
        ("sqlite://relative/fabric.db", "store-url-invalid"),
    ],
)
def test_a_store_url_that_names_no_usable_store_is_refused(url, code):
    with pytest.raises(StoreError) as caught:
        open_store(url)
    assert caught.value.code == code
    assert "sqlite:///" in caught.value.message


def test_a_write_denied_rolls_back_so_the_next_commit_proceeds(tmp_path):
    from lib.fabric.store import Labels
    from lib.fabric.store_errors import WriteDenied

    with SQLiteStore(tmp_path / "f.db") as store:
        put(store, "of:q", 1, labels=Labels((ME,), ("did:key:z6MkOther",)))
        with pytest.raises(WriteDenied):
            put(store, "of:q", 2)
        assert put(store, "of:y", 3) == 2


def _write_from_child(store: SQLiteStore, parent_connection_id: int) -> None:
    put(store, "of:child", "from the forked child")
    # sqlite connections must not cross a fork: the child's write used a new one
    reused = id(store._threads.current()) == parent_connection_id
    store.close()
    raise SystemExit(3 if reused else 0)


def test_a_forked_child_uses_connections_of_its_own(tmp_path):
    import multiprocessing

    store = SQLiteStore(tmp_path / "f.db")
    put(store, "of:parent", 1)  # the parent's connection exists before the fork
    parent_connection_id = id(store._threads.current())
    child = multiprocessing.get_context("fork").Process(
        target=_write_from_child, args=(store, parent_connection_id)
    )
    child.start()
    child.join()
    assert child.exitcode == 0
    assert value_of(store, "of:child") == "from the forked child"
    assert put(store, "of:parent", 2) == 3
    store.close()


def test_a_failed_first_commit_into_a_new_space_leaves_the_space_usable(tmp_path):
    from lib.fabric.store_errors import PreconditionFailed

    with SQLiteStore(tmp_path / "f.db") as store:
        with store.transaction(SPACE, ME) as tx:
            tx.patch("of:absent", set={"a": 1})
            with pytest.raises(PreconditionFailed):
                tx.commit()  # rolled back, the new space row with it
        assert put(store, "of:x", 1) == 1
        assert value_of(store, "of:x") == 1


def test_connections_of_threads_that_ended_are_closed(tmp_path, monkeypatch):
    """A long-running host starts threads, and each thread's connection keeps a page
    cache: those of ended threads are closed (when the next connection is made)."""
    import threading

    made: list[sqlite3.Connection] = []
    connect = sqlite3.connect

    def recorded_connect(*args, **kwargs):
        made.append(connect(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(sqlite3, "connect", recorded_connect)

    def is_open(conn: sqlite3.Connection) -> bool:
        try:
            conn.execute("SELECT 1")
            return True
        except sqlite3.ProgrammingError:  # "Cannot operate on a closed database."
            return False

    with SQLiteStore(tmp_path / "f.db") as store:
        put(store, "of:x", -1)
        for n in range(20):  # one thread after another, each writing once, then ending
            thread = threading.Thread(target=put, args=(store, "of:x", n))
            thread.start()
            thread.join(60)
        assert value_of(store, "of:x") == 19
        assert len(made) == 21
        # this thread's, and the last ended thread's (closed by the next one made)
        assert [is_open(conn) for conn in made] == [True] + [False] * 19 + [True]
    assert not any(is_open(conn) for conn in made)


def test_streamed_writes_are_buffered_by_the_transaction_for_a_store_that_does_not_stream_them(
    tmp_path, monkeypatch
):
    from lib.fabric.cell_id import cell_id
    from lib.fabric.commit_rules import CommitPlan

    seen: list[CommitPlan] = []
    with SQLiteStore(tmp_path / "f.db") as store:
        real = store._commit
        monkeypatch.setattr(store, "streams_writes", lambda: False)
        monkeypatch.setattr(store, "_commit", lambda plan: seen.append(plan) or real(plan))
        cells = [(cell_id(f"streamed/{i}"), f"{i}") for i in range(3)]
        with store.transaction(SPACE, ME) as tx:
            tx.write_streamed(cells)
            tx.commit()
        (plan,) = seen
        assert not plan.streamed and list(plan.ops) == [cell for cell, _ in cells]
        assert [value_of(store, cell) for cell, _ in cells] == [0, 1, 2]


def test_a_large_stored_value_goes_in_through_blob_io_and_reads_back_the_same(tmp_path, traced, monkeypatch):
    """Session 30: a stored value of LARGE_VALUE bytes or more is written as zeros of its
    length, then into its row's blob (sqlite_rows_out.RowsOut._write_large), never bound
    as a parameter; new or replacing a row, it reads back as written."""
    from lib.fabric import sqlite_rows_out

    monkeypatch.setattr(sqlite_rows_out, "LARGE_VALUE", 256)
    import random

    words = random.Random(30).choices(["several", "words", "of", "a", "session", "long"], k=3000)
    big = {"text": " ".join(words), "n": list(range(300))}
    with SQLiteStore(tmp_path / "fabric.db") as store:
        put(store, "of:small", {"a": 1})
        traced.clear()
        put(store, "of:big", big)
        put(store, "of:small", {**big, "n": [7]})  # an existing row replaced by a large value
        assert sum("zeroblob(" in statement for statement in traced) == 2
        assert value_of(store, "of:big") == big and value_of(store, "of:small") == {**big, "n": [7]}
    with sqlite3.connect(tmp_path / "fabric.db") as db:
        kinds = dict(db.execute("select cell_id, typeof(value) from documents"))
    assert set(kinds.values()) == {"blob"}  # compressed, as any large text

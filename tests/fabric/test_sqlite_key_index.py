"""A first sync into an empty SQLite store writes its rows without the key index and
builds it once at the end (sqlite_key_index.py): the index is absent while the fresh
rows go in and there after `finish_fresh_rows`; every read meanwhile is answered right,
from this handle and from another; another writer waits for it; the rules decide any
commit that is not the run's own fresh rows; a file left without the index is repaired
when it is next opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lib.fabric.sqlite_schema import KEY_INDEX
from lib.fabric.sqlite_store import SQLiteStore
from lib.fabric.store import Labels
from lib.fabric.store_errors import StoreBusy, WriteDenied
from tests.fabric.store_contract import ME, SPACE, put, value_of

OTHER = "did:key:z6MkKeyIndexOther"


def _fresh(store: SQLiteStore, cells: dict[str, object], *, writer: str = ME, labels: Labels | None = None) -> int:
    with store.transaction(SPACE, writer) as tx:
        tx.expect_new_cells()
        for cell_id, value in cells.items():
            tx.write(cell_id, value, labels)
        return tx.commit()


def _has_index(path: Path) -> bool:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (KEY_INDEX,)).fetchone() is not None


def _index_rows(path: Path) -> tuple[int, int, str]:
    """(rows, distinct keys, integrity check) of the file."""
    with sqlite3.connect(path) as conn:
        rows, keys = conn.execute("SELECT count(*), count(DISTINCT space_id || ':' || hex(cell_id)) FROM documents").fetchone()
        return rows, keys, conn.execute("PRAGMA integrity_check").fetchone()[0]


def test_a_first_run_writes_without_the_key_index_and_builds_it_once_at_the_end(tmp_path):
    path = tmp_path / "f.db"
    with SQLiteStore(path) as store:
        assert _has_index(path)
        # the roots asked before, as graph_batch.py asks them
        assert store.existing(SPACE, ["of:r1", "of:r2"], roots=True) == set()
        seq = _fresh(store, {"of:c1": 1, "of:r1": {"root": 1}})
        assert not _has_index(path) and store.writes_alone(SPACE)
        assert store.existing(SPACE, ["of:r1", "of:r2"], roots=True) == {"of:r1"}
        _fresh(store, {"of:c2": 2, "of:r2": {"root": 2}})
        assert store.existing(SPACE, ["of:r1", "of:r2", "of:r3"], roots=True) == {"of:r1", "of:r2"}
        assert not _has_index(path)
        store.finish_fresh_rows(SPACE)
        assert _has_index(path) and not store.writes_alone(SPACE)
        assert store.read(SPACE, "of:c1").seq == seq and value_of(store, "of:r2") == {"root": 2}
        assert store.existing(SPACE, ["of:c1", "of:c2", "of:r1", "of:x"]) == {"of:c1", "of:c2", "of:r1"}
        assert _index_rows(path) == (4, 4, "ok")
        # a second run into a store with rows keeps its index throughout
        _fresh(store, {"of:c3": 3})
        assert _has_index(path)
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT count(*) FROM fresh_roots").fetchone() == (0,)


@pytest.mark.parametrize("before", ["two commits", "many rows"])
def test_a_store_with_more_than_a_first_commit_never_drops_its_key_index(tmp_path, before):
    path = tmp_path / "f.db"
    with SQLiteStore(path) as store:
        if before == "two commits":
            put(store, "of:before", 0)
            put(store, "of:after", 1)
        else:
            put(store, "of:roots", 0)
            _fresh(store, {f"of:r{i}": i for i in range(17)})
    with SQLiteStore(path) as store:
        _fresh(store, {f"of:c{i}": i for i in range(50)})
        assert _has_index(path) and not store.writes_alone(SPACE)


def test_the_rows_of_a_first_commit_are_found_and_met_while_the_index_is_absent(tmp_path):
    """A target's opening commits its index roots first: the run defers the index all
    the same, `existing` finds those rows, and a fresh row meeting one takes the rules."""
    path = tmp_path / "f.db"
    with SQLiteStore(path) as store:
        with store.transaction(SPACE, ME) as tx:
            tx.write("of:root1", {"i": 1})
            tx.write("of:gone", 0)
            tx.commit()
    with SQLiteStore(path) as store:
        _fresh(store, {"of:a": 1})
        assert not _has_index(path)
        assert store.existing(SPACE, ["of:root1", "of:a", "of:b"], roots=True) == {"of:root1"}
        _fresh(store, {"of:b": 2, "of:root1": {"i": 2}})  # meets a row there before: the rules' path
        assert _has_index(path) and value_of(store, "of:root1") == {"i": 2} and value_of(store, "of:b") == 2
    assert _index_rows(path) == (4, 4, "ok")


def test_a_read_by_cell_id_of_the_writing_handle_builds_the_index_first(tmp_path):
    path = tmp_path / "f.db"
    with SQLiteStore(path) as store:
        _fresh(store, {"of:a": 1, "of:b": 2})
        assert not _has_index(path)
        assert value_of(store, "of:b") == 2
        assert _has_index(path)
        _fresh(store, {"of:c": 3})  # its run is over: the index stays
        assert _has_index(path)
    for read in (lambda s: s.existing(SPACE, ["of:a"]), lambda s: s.read_many(SPACE, ["of:a"]),
                 lambda s: s.read(SPACE, "of:zz")):
        other = tmp_path / f"g{id(read)}.db"
        with SQLiteStore(other) as store:
            _fresh(store, {"of:a": 1})
            read(store)
            assert _has_index(other)


def test_another_handle_reads_right_while_the_index_is_absent_and_its_writes_wait(tmp_path):
    path = tmp_path / "f.db"
    with SQLiteStore(path) as writer:
        _fresh(writer, {"of:a": {"n": 1}, "of:b": {"n": 2}})
        with SQLiteStore(path, busy_timeout=0.2) as reader:  # opening it leaves the live writer's index alone
            assert not _has_index(path)
            assert value_of(reader, "of:a") == {"n": 1} and reader.read(SPACE, "of:none") is None
            assert reader.existing(SPACE, ["of:a", "of:b", "of:c"]) == {"of:a", "of:b"}
            assert reader.existing(SPACE, ["of:a", "of:c"], roots=True) == {"of:a"}
            assert [c for c, _ in reader.changes_since(SPACE, 0)] == ["of:a", "of:b"]
            with pytest.raises(StoreBusy, match="first sync"):
                put(reader, "of:theirs", 1)
            with pytest.raises(StoreBusy):
                _fresh(reader, {"of:new": 1})
            assert not _has_index(path)
            writer.finish_fresh_rows(SPACE)
            put(reader, "of:theirs", 1)
            assert value_of(writer, "of:theirs") == 1
    assert _index_rows(path) == (3, 3, "ok")


def test_another_writers_fresh_rows_meeting_the_runs_cells_take_the_rules(tmp_path):
    """The run's own fresh rows go in unread; another writer's, on the same handle, end
    the run first, so the rules see the cell it meets (WriteDenied, nothing written)."""
    path = tmp_path / "f.db"
    with SQLiteStore(path) as store:
        _fresh(store, {"of:m": "mine", "of:n": 1}, labels=Labels((ME,), (ME,)))
        assert not _has_index(path)
        with pytest.raises(WriteDenied):
            _fresh(store, {"of:x": 1, "of:m": "forged"}, writer=OTHER)
        assert _has_index(path)
        assert value_of(store, "of:m") == "mine" and store.read(SPACE, "of:x") is None
        assert _index_rows(path) == (2, 2, "ok")


def test_the_rules_path_of_the_writing_handle_builds_the_index_and_upserts(tmp_path):
    path = tmp_path / "f.db"
    with SQLiteStore(path) as store:
        _fresh(store, {"of:a": 1})
        put(store, "of:a", 2)  # a rewrite: the UPSERT needs the unique index
        assert _has_index(path) and value_of(store, "of:a") == 2
        assert _index_rows(path) == (1, 1, "ok")


def test_closing_the_writing_handle_builds_the_index(tmp_path):
    path = tmp_path / "f.db"
    store = SQLiteStore(path)
    _fresh(store, {"of:a": 1})
    assert not _has_index(path)
    store.close()
    assert _has_index(path)


def _left_without_index(path: Path, duplicate: bool) -> None:
    """The file a writer killed during its run leaves: rows, no key index, and (as only a
    broken writer could) a key twice, its later row the newer."""
    with SQLiteStore(path) as store:
        _fresh(store, {"of:a": {"v": "old"}, "of:b": 2})
        # as if the process died here: nothing built, its lock gone with it
        store._key_index.deferred = False
        store._key_index._lock._give()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (KEY_INDEX,)).fetchone() is None
        if duplicate:
            conn.execute("INSERT INTO documents (space_id, cell_id, seq, labels_id, value) "
                         "SELECT space_id, cell_id, seq + 1, labels_id, '{\"v\":\"new\"}' FROM documents "
                         "WHERE cell_id = 'of:a'")
            conn.commit()


@pytest.mark.parametrize("duplicate", [False, True])
def test_a_file_left_without_the_key_index_is_repaired_when_opened(tmp_path, duplicate):
    path = tmp_path / "f.db"
    _left_without_index(path, duplicate)
    with SQLiteStore(path) as store:
        assert _has_index(path)  # before anything reads or writes
        assert value_of(store, "of:a") == ({"v": "new"} if duplicate else {"v": "old"})
        assert value_of(store, "of:b") == 2
        put(store, "of:b", 3)
        assert value_of(store, "of:b") == 3
    assert _index_rows(path) == (2, 2, "ok")


def test_a_first_publication_writes_its_graphs_and_early_rows_without_the_index_and_builds_it_at_the_commit(
    tmp_path, monkeypatch
):
    """Graph batches and the early index rows' groups (fresh rows: their keys new to a
    store this run writes alone) go in without the key index; it is built once, at the
    commit's flush, before the index links anything; the index read back is whole."""
    import lib.fabric.graph_batch as graph_batch
    import lib.fabric.index_store as index_store
    from tests.fabric.target_helpers import descriptor, make_env, prepared, rows, snapshot
    from tests.fabric.test_target_crash import _assert_no_document_links_a_missing_cell

    monkeypatch.setattr(index_store, "ROW_BATCH", 2)
    monkeypatch.setattr(graph_batch, "MAX_SESSIONS", 1)
    env = make_env(tmp_path)
    target = env.target()
    path = tmp_path / "fabric.db"
    source = descriptor()
    with target.publication() as pub:
        pub.begin_source(source, None)
        for n in range(7):
            pub.add_prepared(prepared(source, snapshot(f"s{n}", messages=3)))
        assert not _has_index(path) and target.store.writes_alone(target.space)
        written_early = len(pub._early)
        pub.end_source(None, source.id)
        summary = pub.commit()
    assert written_early >= 4  # groups of two rows, written as their graphs were committed
    assert _has_index(path) and not target.store.writes_alone(target.space)
    assert summary.session_count == 7 and sorted(rows(target)) == [f"codex/s{n}" for n in range(7)]
    assert _assert_no_document_links_a_missing_cell(target) > 0
    count, keys, integrity = _index_rows(path)
    assert count == keys and integrity == "ok"


_READER = """
import json, sys
from lib.fabric.sqlite_store import SQLiteStore
from lib.fabric.store_errors import StoreBusy
space = sys.argv[2]
with SQLiteStore(sys.argv[1], busy_timeout=0.2) as store:
    out = {"a": store.read(space, "of:a").value, "none": store.read(space, "of:none"),
           "existing": sorted(store.existing(space, ["of:a", "of:b", "of:c"]))}
    try:
        with store.transaction(space, sys.argv[3]) as tx:
            tx.write("of:theirs", 1)
            tx.commit()
        out["write"] = "committed"
    except StoreBusy as exc:
        out["write"] = exc.code
print(json.dumps(out))
"""


def test_another_process_reads_right_while_the_index_is_absent_and_its_write_waits(tmp_path):
    import json
    import subprocess
    import sys

    path = tmp_path / "f.db"
    repo = Path(__file__).resolve().parents[2]

    def reader() -> dict:
        done = subprocess.run([sys.executable, "-c", _READER, str(path), SPACE, ME], cwd=repo,
                              capture_output=True, text=True, timeout=120, check=True)
        return json.loads(done.stdout)

    with SQLiteStore(path) as writer:
        _fresh(writer, {"of:a": {"n": 1}, "of:b": {"n": 2}})
        assert reader() == {"a": {"n": 1}, "none": None, "existing": ["of:a", "of:b"], "write": "store-busy"}
        assert not _has_index(path)  # the reader's open left the live writer's run alone
        writer.finish_fresh_rows(SPACE)
        assert reader()["write"] == "committed"
        assert value_of(writer, "of:theirs") == 1


def test_existing_roots_is_answered_while_a_batch_of_the_run_is_being_committed(tmp_path, monkeypatch):
    """The main thread asks for roots while the batch worker commits the batch before:
    the answer does not wait for that commit (it sees what was committed)."""
    import threading

    from lib.fabric.sqlite_rows_out import RowsOut

    with SQLiteStore(tmp_path / "f.db") as store:
        assert store.existing(SPACE, ["of:r1", "of:r2"], roots=True) == set()
        _fresh(store, {"of:r1": 1})
        inside, release = threading.Event(), threading.Event()
        insert = RowsOut.insert_fresh

        def held_open(self, writes):
            keys = insert(self, writes)
            inside.set()
            release.wait(60)
            return keys

        monkeypatch.setattr(RowsOut, "insert_fresh", held_open)
        commit = threading.Thread(target=_fresh, args=(store, {"of:r2": 2}))
        commit.start()
        try:
            assert inside.wait(60)
            answers: list[set[str]] = []
            asking = threading.Thread(target=lambda: answers.append(
                store.existing(SPACE, ["of:r1", "of:r2"], roots=True)))
            asking.start()
            asking.join(60)
            assert answers == [{"of:r1"}]  # answered with the commit still open
        finally:
            release.set()
            commit.join(60)
        assert store.existing(SPACE, ["of:r1", "of:r2"], roots=True) == {"of:r1", "of:r2"}

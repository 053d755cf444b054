"""A graph batch's rows written in one statement (sqlite_schema.INSERT_MANY) and its
commit run on GraphBatch's worker thread (graph_batch.py): the same rows as the per-row
insert, the inserts and the COMMIT off the main thread, a failure there raised at the
next seal and nothing of its batch left."""

from __future__ import annotations

import random
import sqlite3
import threading
from pathlib import Path

import pytest

from lib.fabric import graph_batch, sqlite_rows_out, stored_values
from lib.fabric.cell_id import cell_id
from lib.fabric.graph_plan import plan_graph
from lib.fabric.schemas import scope
from lib.fabric.session_graph import GraphTarget
from lib.fabric.sqlite_store import SQLiteStore
from lib.fabric.store import Labels
from lib.fabric.store_errors import WriteDenied

SPACE = "did:key:z6MkBatchCommitThread"
WRITER = "did:key:z6MkBatchCommitWriter"
OTHER = "did:key:z6MkBatchCommitOther"
native = pytest.mark.skipif(not stored_values.ENCODES_WITHOUT_GIL, reason="lib._cells not built")
ROWS = "SELECT rowid, cell_id, seq, labels_id, typeof(value), value FROM documents ORDER BY rowid"


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(thread name, SQL) of every statement the store's connections run from here on."""
    seen: list[tuple[str, str]] = []
    connect = sqlite3.connect

    def traced_connect(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(lambda sql: seen.append((threading.current_thread().name, sql)))
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced_connect)
    return seen


def _cells() -> dict[str, tuple[object, Labels | None]]:
    """Cells of every kind a row holds: content IDs (a BLOB key) and other IDs (TEXT),
    short text, compressed text (a BLOB), text that does not compress, non-ASCII text,
    an empty string, and two labels (the writer's own, and others given)."""
    shared = Labels((WRITER,), (WRITER, OTHER))
    rng = random.Random(25)
    out: dict[str, tuple[object, Labels | None]] = {}
    for n in range(120):
        value: object = {"n": n, "t": "word " * (n * 13)}
        if n % 5 == 0:
            value = {"n": n, "r": "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=600))}
        if n % 7 == 0:
            value = "caf\u00e9 \u65e5\u672c " * n
        out[cell_id({"kind": "test", "n": n})] = (value, shared if n % 3 == 0 else None)
    out["of:text-id"] = ("", None)
    out["of:\u00e9-text-id"] = ({"k": [1, 2]}, shared)
    return out


def _write(store: SQLiteStore, cells: dict[str, tuple[object, Labels | None]], *, expect_new: bool) -> int:
    with store.transaction(SPACE, WRITER) as tx:
        if expect_new:
            tx.expect_new_cells()
        for cell, (value, labels) in cells.items():
            tx.write(cell, value, labels)
        return tx.commit()


def _rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        labels = dict(conn.execute("SELECT id, json FROM labels"))
        return [(*row[:3], labels[row[3]], *row[4:]) for row in conn.execute(ROWS)]


@pytest.mark.parametrize("group_bytes", [sqlite_rows_out.GROUP_BYTES, 2_000])
def test_the_one_statement_insert_writes_the_rows_the_per_row_insert_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statements, group_bytes: int
) -> None:
    """Fresh rows (INSERT_MANY; in one statement, or in groups of about 2 KB) against
    the same cells written without the hint (the rules' path: one INSERT a row): the
    same rowids, IDs, seq, labels and value bytes."""
    monkeypatch.setattr(sqlite_rows_out, "GROUP_BYTES", group_bytes)
    cells = _cells()
    with SQLiteStore(tmp_path / "one.db") as store:
        assert _write(store, cells, expect_new=True) == 1
    statements_run = sum("WITH RECURSIVE" in sql for _, sql in statements)
    assert statements_run == 1 if group_bytes > 2_000 else statements_run > 5
    with SQLiteStore(tmp_path / "rows.db") as store:
        assert _write(store, cells, expect_new=False) == 1
    one, rows = _rows(tmp_path / "one.db"), _rows(tmp_path / "rows.db")
    assert len(one) == len(cells)
    assert {kind for *_, kind, _ in one} == {"text", "blob"}
    assert {type(row[1]) for row in one} == {str, bytes}
    assert one == rows


def _target(tmp_path: Path) -> GraphTarget:
    return GraphTarget(SQLiteStore(tmp_path / "fabric.db"), SPACE, WRITER, WRITER, Labels.owned_by(WRITER))


def _graph(n: int):
    value = {"n": n, "events": [{"text": f"event {n} {i} " + "word " * 100} for i in range(4)]}
    return plan_graph({"test": "batch-thread", "n": n}, value, scope(SPACE, WRITER, "test-batch-thread", n=n))


def _stage_and_flush(batch: graph_batch.GraphBatch, graphs: list) -> None:
    for graph in graphs:
        batch.add(graph)
        batch.end_session()
    batch.flush()


@native
def test_every_batch_is_inserted_and_committed_on_the_worker_thread_none_on_the_main_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statements
) -> None:
    monkeypatch.setattr(graph_batch, "MAX_SESSIONS", 2)
    target = _target(tmp_path)
    graphs = [_graph(n) for n in range(5)]
    batch = graph_batch.GraphBatch(target)
    statements.clear()
    _stage_and_flush(batch, graphs)
    main = threading.main_thread().name
    inserts = [thread for thread, sql in statements if "INSERT INTO documents" in sql]
    commits = [thread for thread, sql in statements if sql == "COMMIT"]
    assert batch.commits == 3 and len(inserts) == 3 and len(commits) >= 3
    assert main not in inserts and main not in commits
    for graph in graphs:  # visible once flushed
        assert target.store.existing(SPACE, [c.id for c in graph.cells()]) == {c.id for c in graph.cells()}
    target.store.close()


@native
def test_a_batch_whose_commit_fails_on_the_worker_raises_at_the_next_seal_and_leaves_nothing_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statements
) -> None:
    """A real fault: a cell of the second batch is another writer's, so the worker's
    commit (the one statement, then the rules) is denied."""
    monkeypatch.setattr(graph_batch, "MAX_SESSIONS", 2)
    target = _target(tmp_path)
    graphs = [_graph(n) for n in range(6)]
    theirs = graphs[2].cells()[0]
    with target.store.transaction(SPACE, OTHER) as tx:
        tx.write(theirs.id, theirs.value, Labels.owned_by(OTHER))
        tx.commit()
    batch = graph_batch.GraphBatch(target)
    statements.clear()
    try:
        _stage_and_flush(batch, graphs)
    except WriteDenied:
        batch.discard()
    else:
        pytest.fail("the batch holding another writer's cell was committed")
    denied = [thread for thread, sql in statements if "INSERT INTO documents" in sql]
    assert threading.main_thread().name not in denied
    store = target.store
    cells = [[c.id for c in g.cells()] for g in graphs]
    assert all(len(store.existing(SPACE, ids)) == len(ids) for ids in cells[:2])
    assert store.existing(SPACE, cells[2] + cells[3]) == {theirs.id}  # nothing of its batch
    assert store.read(SPACE, theirs.id).labels == Labels.owned_by(OTHER)
    assert not store.existing(SPACE, cells[4] + cells[5])  # staged after it: dropped
    store.close()

"""Rows new to the index have their cells written while the publication runs
(lib/fabric/early_rows.py), not by the index commit at its end: the index read back is
the one the commit alone wrote, a cell that exists or moved is left to the commit, and
a publisher killed after writing rows early leaves the prior indexes whole."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

import lib.fabric.graph_batch as graph_batch
import lib.fabric.index_store as index_store
from lib.fabric import stored_values
from lib.fabric.early_rows import EarlyRows
from lib.fabric.publication import Publication
from lib.fabric.sqlite_store import SQLiteStore
from tests.fabric.target_helpers import (
    descriptor,
    index,
    make_env,
    prepared,
    publish,
    rows,
    snapshot,
)
from tests.fabric.test_index_groups_bounded import CHILD_PUBLISHES, killed_when
from tests.fabric.test_target_crash import _assert_no_document_links_a_missing_cell


def _stored(target) -> dict[str, tuple]:
    """Every cell of the space: its value and labels (not its seq)."""
    store, space = target.store, target.space
    ids = [cell for cell, _ in store.changes_since(space, 0)]
    return {cell: (document.value, document.labels) for cell, document in store.iter_many(space, ids)}


def _row_links(target) -> list[str]:
    return [link.id for link in target.store.read(target.space, target.all_index_id()).value["sessions"]]


def test_new_rows_cells_are_written_before_the_commit_is_called(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(index_store, "ROW_BATCH", 2)
    monkeypatch.setattr(graph_batch, "MAX_SESSIONS", 1)  # each graph committed once the next is staged
    env = make_env(tmp_path)
    target = env.target()
    source = descriptor()
    with target.publication() as pub:
        pub.begin_source(source, None)
        for n in range(7):
            pub.add_prepared(prepared(source, snapshot(f"s{n}", messages=3)))
        before = {cell for cell, _ in target.store.changes_since(target.space, 0)}
        assert _row_links(target) == []  # the index links none yet
        pub.end_source(None, source.id)
        summary = pub.commit()
    links = _row_links(target)
    # groups of two rows were written as the rows came, once their graphs were committed;
    # how many groups were done before the commit depends on the worker thread that makes
    # a group's stored forms (4 rows, as a rule; 6 on a loaded machine), but never the
    # last row's: its graph is still staged until the commit
    early = sum(link in before for link in links)
    assert len(links) == 7 and 2 <= early <= 6
    assert summary.session_count == 7
    assert _assert_no_document_links_a_missing_cell(target) > 0


def test_the_index_read_back_is_the_one_the_commit_alone_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Two stores, one identity and clock: one published with rows written early (in
    groups of three), one with every row left to the commit (as before early_rows.py).
    Two publications: new rows, then changed rows and more new ones."""
    (tmp_path / "early").mkdir()
    (tmp_path / "commit").mkdir()
    early_env = make_env(tmp_path / "early")
    shutil.copy(tmp_path / "early" / "identity", tmp_path / "commit" / "identity")
    commit_env = make_env(tmp_path / "commit")
    first = [snapshot(f"s{n}", messages=n % 4 + 1) for n in range(8)]
    second = [snapshot(f"s{n}", messages=5, text="changed") for n in range(3)] + [
        snapshot(f"t{n}", messages=2) for n in range(4)]
    summaries = {}
    for name, env in (("early", early_env), ("commit", commit_env)):
        with monkeypatch.context() as patched:
            patched.setattr(index_store, "ROW_BATCH", 3)
            if name == "commit":
                patched.setattr(EarlyRows, "add", lambda self, row: None)
            target = env.target()
            summaries[name] = [publish(target, descriptor(), snaps, listed=[s.summary.native_session_id
                                                                           for s in first + second])[0]
                               for snaps in (first, second)]
    early, commit = early_env.target(), commit_env.target()
    assert index(early) == index(commit) and index(early, "recent") == index(commit, "recent")
    assert _stored(early) == _stored(commit)
    assert [s.cells_written for s in summaries["early"]] == [s.cells_written for s in summaries["commit"]]


def _rows_written_early(target, source, count: int) -> Publication:
    """A publication of sessions s0.. whose rows' cells are written (not committed)."""
    pub = target.publication()
    pub.begin_source(source, None)
    for n in range(count):
        pub.add_prepared(prepared(source, snapshot(f"s{n}", messages=2)))
    pub.batch.flush()  # the graphs the rows link: committed
    pub._early.flush()
    return pub


@pytest.mark.skipif(not stored_values.ENCODES_WITHOUT_GIL, reason="lib._cells not built")
def test_early_groups_stored_forms_are_made_on_the_worker_and_their_transaction_on_the_callers_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Session 26: an early group is a graph_batch.SealedWrite like a graph batch; its
    stored forms are made on the worker thread, but its transaction (the rules' path for
    cells required absent: rows read, then written row by row) stays on the caller's
    thread, where it does not stall the worker behind the caller's Python (measured
    0.4 to 0.9 s slower at 3,000 threads when it ran on the worker)."""
    seen: list[tuple[str, str]] = []
    forms: list[str] = []
    connect = sqlite3.connect
    real_forms = SQLiteStore.stored_forms

    def traced_connect(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(lambda sql: seen.append((threading.current_thread().name, sql)))
        return conn

    def stored_forms(self, space, texts):  # noqa: ANN001, ANN202
        if any('"recentMessages"' in text or '"previews"' in text for text in texts):
            forms.append(threading.current_thread().name)
        return real_forms(self, space, texts)

    monkeypatch.setattr(sqlite3, "connect", traced_connect)
    monkeypatch.setattr(SQLiteStore, "stored_forms", stored_forms)
    monkeypatch.setattr(index_store, "ROW_BATCH", 2)
    monkeypatch.setattr(graph_batch, "MAX_SESSIONS", 1)
    target, source = make_env(tmp_path).target(), descriptor()
    main = threading.main_thread().name
    with target.publication() as pub:
        pub.begin_source(source, None)
        for n in range(7):
            pub.add_prepared(prepared(source, snapshot(f"s{n}", messages=3)))
        pub.batch.flush()
        seen.clear()
        pub._early.flush()
        assert len(pub._early) == 7
        pub.end_source(None, source.id)
        pub.commit()
    assert forms and all(thread.startswith("agentctl-graph-batch") for thread in forms)
    row_reads = [thread for thread, sql in seen if sql.startswith(ROW_READ)]
    assert row_reads and set(row_reads) == {main}
    assert len(rows(target)) == 7
    assert _assert_no_document_links_a_missing_cell(target) > 0


def test_rows_a_publication_wrote_early_and_then_abandoned_are_written_again_by_the_next_one(tmp_path: Path):
    """An abandoned publication (closed uncommitted, as a crash leaves it) leaves its
    early cells; the next publication's group requiring them absent writes nothing, and
    its commit writes the rows it publishes."""
    target, source = make_env(tmp_path).target(), descriptor()
    with _rows_written_early(target, source, 3) as pub:
        assert len(pub._early) == 3
    assert _row_links(target) == []
    publish(target, source, [snapshot(f"s{n}", messages=3, title=f"new {n}") for n in range(3)])
    got = rows(target)
    assert [got[f"codex/s{n}"]["title"] for n in range(3)] == ["new 0", "new 1", "new 2"]
    assert [len(got[f"codex/s{n}"]["recentMessages"]) for n in range(3)] == [3, 3, 3]
    assert _assert_no_document_links_a_missing_cell(target) > 0


def test_fake_other_writer_a_row_cell_rewritten_after_it_was_written_early_is_written_again_by_the_commit(
    tmp_path: Path,
):
    """A fault a real run shows only in a race: another publisher, under the lock,
    rewrote the cell of a row this one wrote early, and failed before linking it. Faked
    by rewriting the cell directly; the commit must not link it as it is."""
    target, source = make_env(tmp_path).target(), descriptor()
    with _rows_written_early(target, source, 2) as pub:
        cell = next(cell for key, cell, *_ in pub._early._cells if key == "codex/s0")  # the row cell's ID
        with target.store.transaction(target.space, target.writer) as tx:
            tx.write(cell, {"key": "codex/s0", "junk": True}, target.labels)
            tx.commit()
        pub.end_source(None, source.id)
        pub.commit()
    got = rows(target)
    assert "junk" not in got["codex/s0"] and got["codex/s0"]["title"] == "title of s0"
    assert [m["text"] for m in got["codex/s0"]["recentMessages"]] == ["message 0", "message 1"]


_CHILD = """
import sys, time
from pathlib import Path
import lib.fabric.graph_batch as graph_batch
import lib.fabric.index_store as index_store
from lib.fabric import stored_values
from lib.fabric.early_rows import EarlyRows
from tests.fabric.target_helpers import descriptor, make_env, publish, snapshot

index_store.ROW_BATCH = 2
graph_batch.MAX_SESSIONS = 1
real_write = EarlyRows.write

def write_then_wait(self):
    real_write(self)
    if len(self) >= 4:  # two groups written early, before the commit
        print("rows written", flush=True)
        time.sleep(600)  # killed here

EarlyRows.write = write_then_wait
""" + CHILD_PUBLISHES.format(prior=3, new=7)


def test_a_publisher_killed_with_sigkill_after_writing_rows_early_leaves_the_prior_indexes_whole(tmp_path: Path):
    env = make_env(tmp_path)
    target = env.target()
    names = [f"s{i}" for i in range(3)]
    publish(target, descriptor(), [snapshot(n, messages=2) for n in names])
    before = index(target)

    killed_when(_CHILD, "rows written", str(tmp_path))

    target = env.target()
    assert index(target) == before
    assert _assert_no_document_links_a_missing_cell(target) > 0
    names += [f"new{i}" for i in range(7)]
    publish(target, descriptor(), [snapshot(n, messages=4) for n in names])  # the next one completes it
    got = rows(target)
    assert set(got) == {f"codex/{n}" for n in names}
    assert all(len(row["recentMessages"]) == 4 for row in got.values())


ROW_READ = "SELECT cell_id, seq, labels_id, value IS NOT NULL FROM documents"


def _commit_traced(target, count: int, traced: list[str]) -> Publication:
    """A publication of sessions s0.. committed, the statements traced from its commit on."""
    source = descriptor()
    with target.publication() as pub:
        pub.begin_source(source, None)
        for n in range(count):
            pub.add_prepared(prepared(source, snapshot(f"s{n}", messages=3)))
        pub.end_source(None, source.id)
        traced.clear()
        pub.commit()
    return pub


def test_rows_left_to_the_commit_are_inserted_without_reading_their_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, traced: list[str]
):
    """Rows no root links, left to the commit (here: none written early), are new as a
    rule: the commit's groups hint expect_new_cells, so the only rows it reads are the
    final transaction's (the roots and the ordering)."""
    monkeypatch.setattr(EarlyRows, "add", lambda self, row: None)
    target = make_env(tmp_path).target()
    _commit_traced(target, 4, traced)
    reads = [s for s in traced if s.startswith(ROW_READ)]
    # one read, of the final transaction's few cells, not of the rows' 16 (4 x 3 previews + 4)
    assert [s.count("x'") for s in reads] == [4]
    assert len(rows(target)) == 4


def test_rows_still_waiting_at_the_commit_are_the_commits_own_written_without_another_early_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, traced: list[str]
):
    """Session 26: at the commit, the sealed early group is committed and the rows still
    waiting are left to the commit's own groups (new cells in one statement, no row
    read), not written in one more early group (its rows read for `require_absent`)."""
    monkeypatch.setattr(index_store, "ROW_BATCH", 2)
    monkeypatch.setattr(graph_batch, "MAX_SESSIONS", 1)
    target = make_env(tmp_path).target()
    early = len(_commit_traced(target, 7, traced)._early)
    reads = [s for s in traced if s.startswith(ROW_READ)]
    assert 0 < early < 7, "some rows were written early, the last ones by the commit"
    # the sealed group's read (its two rows' cells) and the final transaction's, no other
    assert len(reads) <= 2 and [s.count("x'") for s in reads][-1] == 4
    got = rows(target)
    assert len(got) == 7 and all(len(row["recentMessages"]) == 3 for row in got.values())
    assert _assert_no_document_links_a_missing_cell(target) > 0


def test_a_row_written_early_is_held_as_a_record_on_disk_and_dropped_as_the_commit_takes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Issue 14 goal 4: what EarlyRows notes of a written row is a record on disk (its
    cell ID, seq, cells and the place of the row's block), no object in memory, until the
    commit, and is dropped as the commit takes the row, the emptied table with it, so none
    of it is held through the roots' final transaction; the cell is linked as it is only
    for the very row written (a key touched again since has its cell written anew)."""
    monkeypatch.setattr(index_store, "ROW_BATCH", 2)
    monkeypatch.setattr(graph_batch, "MAX_SESSIONS", 1)
    target = make_env(tmp_path).target()
    source = descriptor()
    sizes: list[int] = []
    taken: list[bool] = []
    real_write_root, real_take = index_store.write_root, EarlyRows.take

    def write_root(*args):  # the final transaction: what EarlyRows holds then
        sizes.append(len(early._noted))
        return real_write_root(*args)

    def take(self, row, linked):
        got = real_take(self, row, linked)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(index_store, "write_root", write_root)
    monkeypatch.setattr(EarlyRows, "take", take)
    with target.publication() as pub:
        early = pub._early
        pub.begin_source(source, None)
        for n in range(7):
            pub.add_prepared(prepared(source, snapshot(f"s{n}", messages=3)))
        pub.batch.flush()
        early.flush()
        assert len(early) == 7  # every row written early
        assert [key for key, *_ in early._cells] == [f"codex/s{n}" for n in range(7)]
        assert early._noted is None and not early._waiting  # nothing a row in memory until the commit
        # s0 read again (its row changed): its cell, written early, is not the row published
        pub.add_prepared(prepared(source, snapshot("s0", messages=4)))
        pub.end_source(None, source.id)
        pub.commit()
    assert sizes == [0, 0]
    assert taken.count(False) == 1 and taken.count(True) == 6
    got = rows(target)
    assert len(got) == 7 and len(got["codex/s0"]["recentMessages"]) == 4
    assert len(_row_links(target)) == 7 and _assert_no_document_links_a_missing_cell(target) > 0


def test_the_rows_written_early_are_found_by_place_at_the_commit_without_an_object_a_row():
    """Issue 14 goal 4: at the commit, what EarlyRows noted of each row written early is
    read into arrays found by the row's place (WrittenRows), not a dict by key of a tuple
    and two strings a row (about 300 bytes a row, 7.5 MB at once for 25,000 new rows):
    each place gives its own record once, an unknown or taken place none, and the
    arrays cost the cell ID's 60 bytes and about 50 more a row (a dict: 356)."""
    import tracemalloc

    from lib.fabric.early_rows import WrittenRows
    from lib.record_spill import RecordSpill

    count = 5000
    spill = RecordSpill()
    cell_id = "baedreia" + "x" * 52  # the length of a cell ID
    places = [n * 7919 * 65536 + 300 + n % 5 for n in range(count)]  # offset and length in one int
    for n, place in enumerate(places):
        spill.add((f"codex/{n:036d}", cell_id[:-6] + f"{n:06d}", 100 + n, 13, place))
    spill.add(("codex/not-a-table-row", cell_id, 1, 1, -1))  # no place: never taken
    tracemalloc.start()
    written = WrittenRows(spill)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(written) == count
    assert held < 130 * count, f"{held / count:.0f} bytes a row"
    assert written.pop(12345) is None  # no row written there
    for n in (0, 4999, 17, 2500):
        assert written.pop(places[n]) == (cell_id[:-6] + f"{n:06d}", 100 + n, 13)
        assert written.pop(places[n]) is None  # taken once
    assert all(written.pop(place) is not None for n, place in enumerate(places) if n not in (0, 4999, 17, 2500))
    assert len(written) == 0 and written.pop(places[1]) is None

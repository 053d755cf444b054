"""A publication that changes rows the index already links (every session read again
after a run that marked them all stale) holds their cells in a private temporary file,
not in memory, until the final transaction (held_cells.py, issue 14 goal 4): the stored
documents are the very ones the general planner gives, no transaction buffers more
than a group of row cells (the final transaction: none), and a publisher killed before the final transaction leaves
the old index whole."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import lib.fabric.index_store as index_store
import lib.fabric.row_cells as row_cells
import lib.fabric.stored_values as stored_values
from lib.fabric.held_cells import HeldCells
from lib.fabric.store import Transaction
from tests.fabric.target_helpers import descriptor, index, make_env, publish, rows, snapshot
from tests.fabric.test_index_groups_bounded import killed_when
from tests.fabric.test_row_cells import planned_and_direct
from tests.fabric.test_target_crash import (
    _assert_every_indexed_manifest_is_complete,
    _assert_no_document_links_a_missing_cell,
    _integrity,
)

NAMES = [f"s{i}" for i in range(10)]


def _sessions(text: str = "message") -> list:
    """Rows of every shape a publication makes: few and many previews (past the twelve
    kept), previews large enough to spill, unusual titles, a worktree's cwd."""
    out = []
    for i, name in enumerate(NAMES):
        out.append(snapshot(
            name, messages=1 + (i * 3) % 16, text=(text + " ") * (1 + 400 * (i % 3 == 0)),
            title=["plain", "t\u00e9st \U0001f600 \"quoted\"", "a\\b\u2028c"][i % 3] + f" {i}",
            cwd=f"/home/p/worktrees/w{i % 4}" if i % 2 else None, started_as="exec" if i == 4 else None,
        ))
    return out


def _resync_every_row(target) -> None:
    """A first publication, one that marks every row stale (read errors) or deleted (not
    listed), then every session read again: each row changed twice."""
    publish(target, descriptor(), _sessions())
    listed = NAMES[:-2]
    publish(target, descriptor(), [], read_errors=listed, listed=listed)
    publish(target, descriptor(), _sessions("again"))


@pytest.mark.parametrize("stored_previews", ["read as their IDs", "read as JSON"])
def test_changed_rows_store_the_same_documents_as_the_general_planner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stored_previews: str
):
    monkeypatch.setattr(index_store, "ROW_BATCH", 3)
    if stored_previews == "read as JSON":  # the store's reading of short links as IDs not taken
        monkeypatch.setattr(stored_values, "_cut_short_links", lambda text, name: (text, None))
    real_links, stored_rows = row_cells._stored_preview_links, []

    def stored_links(previews, space):  # rows whose status alone changed: their previews as stored
        links = real_links(previews, space)
        stored_rows.extend(links)
        return links

    monkeypatch.setattr(row_cells, "_stored_preview_links", stored_links)
    planned, direct = planned_and_direct(tmp_path, monkeypatch, _resync_every_row)
    assert len(planned) > 100
    assert planned == direct
    assert len(stored_rows) >= len(NAMES) - 2  # the rows marked stale took that path
    got = rows(make_env(tmp_path / "direct").target())
    assert {row["status"] for row in got.values()} == {"complete"}
    assert [m["text"] for m in got["codex/s1"]["recentMessages"]] == [f"again  {i}" for i in range(4)]


def test_a_resync_of_every_row_buffers_no_row_cell_in_the_final_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot(n, messages=3) for n in NAMES])
    publish(target, descriptor(), [], read_errors=NAMES, listed=NAMES)
    roots = {target.all_index_id(), target.recent_index_id()}
    final: list[tuple[int, int]] = []  # (cells buffered, cells streamed) of the roots' transaction
    real_commit = Transaction.commit

    def counting(tx: Transaction) -> int:
        plan = tx._open()
        if roots & plan.ops.keys():
            final.append((len(plan.ops), sum(len(list(cells)) for cells, _ in plan.streamed)))
        return real_commit(tx)

    monkeypatch.setattr(index_store, "ROW_BATCH", 2)
    monkeypatch.setattr(Transaction, "commit", counting)
    real_commit_indexes = index_store.commit_indexes
    counted: list[int] = []
    monkeypatch.setattr(index_store, "commit_indexes", lambda *a, **k: counted.append(real_commit_indexes(*a, **k))
                        or counted[-1])
    publish(target, descriptor(), [snapshot(n, messages=3, text="changed") for n in NAMES])
    monkeypatch.undo()
    (ops, streamed), = final
    assert counted == [ops + streamed]  # the cells it wrote, streamed ones too
    # the final transaction buffers the ordering and the two roots (and their sources and
    # checkouts), not the rows: each changed row's three previews and its row cell stream
    assert ops <= 6
    assert streamed == 4 * len(NAMES)
    got = rows(target)
    assert {row["status"] for row in got.values()} == {"complete"}
    assert all([m["text"] for m in row["recentMessages"]] == [f"changed {i}" for i in range(3)]
               for row in got.values())
    assert _assert_no_document_links_a_missing_cell(target) > 0


def test_held_cells_are_kept_in_a_private_file_and_only_the_changed_ones_are_given(tmp_path: Path):
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot(n, messages=2) for n in NAMES[:2]])
    stored = {row["key"]: row for row in index(target)["sessions"]}
    cell = target.store.read(target.space, target.all_index_id()).value["sessions"][0].id
    held = HeldCells()
    try:
        held.add(cell, "".join(target.store.read_text(target.space, cell)[1]))  # as stored
        held.add("of:fid1:" + "N" * 43, '{"new":true}')  # absent
        fd = held._spill._file.fileno()  # type: ignore[union-attr]
        assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o600
        assert os.fstat(fd).st_nlink == 0  # unlinked: gone with the process
        assert list(held) == list(held) and len(held) == 2  # read again, for a commit attempted twice
        changed = held.take_changed(target)
        assert list(changed) == [("of:fid1:" + "N" * 43, '{"new":true}')]
        assert len(held) == 0 and held._spill._file is None
    finally:
        held.clear()
    assert stored


# a child's last steps: read every session again after they were all marked stale, and
# stop (killed) once the changed rows' cells are held, before the final transaction
_CHILD = """
import sys, time
from pathlib import Path
import lib.fabric.index_store as index_store
import lib.fabric.row_cells as row_cells
import lib.fabric.stored_values as stored_values
from lib.fabric.held_cells import HeldCells
from tests.fabric.target_helpers import descriptor, make_env, publish, snapshot

index_store.ROW_BATCH = 2
real_changed = HeldCells.take_changed

def changed_then_wait(self, target):
    out = real_changed(self, target)
    print("held", len(out), flush=True)
    time.sleep(600)  # killed here: every group done, the final transaction not begun

HeldCells.take_changed = changed_then_wait
env = make_env(Path(sys.argv[1]))
publish(env.target(), descriptor(), [snapshot(f"s{i}", messages=3, text="changed") for i in range(10)])
"""


def test_injected_kill_before_the_final_transaction_of_changed_rows_leaves_the_old_index_whole(tmp_path: Path):
    """The kill comes at an injected pause (a fault no real part shows at that point)."""
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot(n, messages=3) for n in NAMES])
    publish(target, descriptor(), [], read_errors=NAMES, listed=NAMES)
    before = index(target)
    assert {row["status"] for row in before["sessions"]} == {"partial"}

    killed_when(_CHILD, "held 40", str(tmp_path))

    target = env.target()
    assert index(target) == before
    assert _assert_every_indexed_manifest_is_complete(target) == {f"codex/{n}": 3 for n in NAMES}
    assert _integrity(tmp_path) == "ok"
    assert _assert_no_document_links_a_missing_cell(target) > 0
    publish(target, descriptor(), [snapshot(n, messages=3, text="changed") for n in NAMES])
    assert {row["status"] for row in rows(target).values()} == {"complete"}

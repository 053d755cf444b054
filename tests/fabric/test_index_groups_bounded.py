"""The index commit writes its new rows in groups bounded by rows and by their spilled
previews' bytes, one group staged at a time (issue 14 goal 4): every row reads back,
and a publisher killed between two groups leaves the prior indexes whole."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import lib.fabric.index_store as index_store
from lib.fabric.packed_previews import PreviewSpill, spilled_bytes
from lib.fabric.store import Transaction
from tests.fabric.target_helpers import descriptor, index, make_env, publish, rows, snapshot
from tests.fabric.test_target_crash import (
    GUARD,
    REPO,
    _assert_every_indexed_manifest_is_complete,
    _assert_no_document_links_a_missing_cell,
    _integrity,
)


def test_row_groups_keep_order_and_bound_rows_and_spilled_bytes(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(index_store, "ROW_BATCH", 4)
    spill = PreviewSpill()
    try:
        messages = [{"id": f"m{i}", "role": "user", "text": "w" * 300} for i in range(3)]
        rows_ = [{"key": f"codex/s{i}", "recentMessages": spill.spill(messages)} for i in range(11)]
        size = spilled_bytes(rows_[0]["recentMessages"])
        assert size > 0
        monkeypatch.setattr(index_store, "GROUP_BYTES", 2 * size)
        groups = list(index_store.row_groups(rows_))
        assert [row for group in groups for row in group] == rows_
        assert [len(group) for group in groups] == [2] * 5 + [1]
        assert all(sum(spilled_bytes(r["recentMessages"]) for r in group) <= 2 * size for group in groups)
        monkeypatch.setattr(index_store, "GROUP_BYTES", 1)  # a row larger than the bound: a group of its own
        assert [len(group) for group in index_store.row_groups(rows_)] == [1] * 11
        monkeypatch.setattr(index_store, "GROUP_BYTES", 1 << 30)
        assert [len(group) for group in index_store.row_groups(rows_)] == [4, 4, 3]
    finally:
        spill.close()


def test_rows_written_in_groups_of_few_bytes_stage_one_group_at_a_time_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    env = make_env(tmp_path)
    target = env.target()
    names = [f"s{i}" for i in range(9)]
    staged: list[int] = []
    real_commit = Transaction.commit

    def counting(tx: Transaction) -> int:
        plan = tx._open()
        if not any(cell in plan.ops for cell in (target.all_index_id(), target.recent_index_id())):
            staged.append(len(plan.ops))
        return real_commit(tx)

    monkeypatch.setattr(index_store, "GROUP_BYTES", 1)  # every row a group of its own
    monkeypatch.setattr(Transaction, "commit", counting)
    publish(target, descriptor(), [snapshot(n, messages=3) for n in names])
    monkeypatch.undo()
    # each index row's group: its three preview cells and the row cell (the session
    # graphs are committed by graph_batch before, in transactions of their own)
    assert staged.count(4) == len(names)
    got = rows(target)
    assert set(got) == {f"codex/{n}" for n in names}
    for n in names:
        assert [m["text"] for m in got[f"codex/{n}"]["recentMessages"]] == ["message 0", "message 1", "message 2"]
    assert _assert_no_document_links_a_missing_cell(target) > 0


# a child's last steps: publish `prior` sessions again, changed, and `new` new ones
CHILD_PUBLISHES = """
env = make_env(Path(sys.argv[1]))
names = [f"s{{i}}" for i in range({prior})] + [f"new{{i}}" for i in range({new})]
publish(env.target(), descriptor(), [snapshot(n, messages=4) for n in names])
print("committed", flush=True)
"""

_CHILD = """
import sys, time
from pathlib import Path
import lib.fabric.index_store as index_store
from tests.fabric.target_helpers import descriptor, make_env, publish, snapshot

index_store.GROUP_BYTES = 1  # one row a group
real_groups = index_store.row_groups

def groups_then_wait(rows):
    for n, group in enumerate(real_groups(rows)):
        if n == int(sys.argv[2]):  # asked for the next group: the ones before are written
            print("groups written", flush=True)
            time.sleep(600)  # killed here, inside the index commit
        yield group

index_store.row_groups = groups_then_wait
""" + CHILD_PUBLISHES.format(prior=6, new=4)


def test_a_publisher_killed_with_sigkill_between_index_row_groups_leaves_the_prior_indexes_whole(tmp_path: Path):
    env = make_env(tmp_path)
    target = env.target()
    names = [f"s{i}" for i in range(6)]
    publish(target, descriptor(), [snapshot(n, messages=2) for n in names])
    before = index(target)

    killed_when(_CHILD, "groups written", str(tmp_path), "4")

    target = env.target()
    assert index(target) == before
    assert _assert_every_indexed_manifest_is_complete(target) == {f"codex/{n}": 2 for n in names}
    assert _integrity(tmp_path) == "ok"
    assert _assert_no_document_links_a_missing_cell(target) > 0

    # the next run (taking the publish lock the dead process held) completes the work
    more = [f"new{i}" for i in range(4)]
    publish(target, descriptor(), [snapshot(n, messages=4) for n in names + more])
    assert _assert_every_indexed_manifest_is_complete(target) == {f"codex/{n}": 4 for n in names + more}


def killed_when(code: str, line: str, *args: str) -> None:
    """Run `code` in a child Python (from the repo), SIGKILL it once it prints `line`."""
    child = subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == line
    os.kill(child.pid, signal.SIGKILL)
    child.wait(GUARD)
    assert child.returncode == -signal.SIGKILL

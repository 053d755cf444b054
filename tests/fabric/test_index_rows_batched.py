"""Index rows held with packed previews and planned a batch at a time (issue 14, memory):
the index read back is the one a whole-index plan gives, and a commit that fails after
some row batches were written leaves the prior indexes whole."""

from __future__ import annotations

from pathlib import Path

import pytest

import lib.fabric.index_store as index_store
from lib.fabric.packed_previews import PackedPreviews, StoredPreviews, packed_row, unpacked_row
from lib.fabric.same_rows import same_row
from lib.fabric.store import Transaction
from lib.hashing import value_hash
from tests.fabric.target_helpers import descriptor, index, make_env, publish, rows, snapshot
from tests.fabric.test_target_crash import (
    _assert_every_indexed_manifest_is_complete,
    _assert_no_document_links_a_missing_cell,
)


def test_packed_previews_give_back_the_same_messages_and_hash_as_the_plain_row():
    messages = [{"id": "m1", "role": "user", "text": "héllo \u2028 line", "eventIndex": 0, "n": 2**40},
                {"id": "m2", "role": "assistant", "text": "x" * 5000, "eventIndex": 1, "n": None}]
    row = {"key": "codex/a", "status": "complete", "recentMessages": messages}
    packed = packed_row(dict(row))
    assert isinstance(packed["recentMessages"], PackedPreviews)
    assert unpacked_row(packed) == row
    assert value_hash(packed) == value_hash(row)
    assert same_row(packed, packed_row(dict(row)))
    assert not same_row(packed, packed_row({**row, "recentMessages": messages[:1]}))


def test_rows_planned_in_small_batches_read_back_as_published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(index_store, "ROW_BATCH", 2)
    env = make_env(tmp_path)
    target = env.target()
    names = [f"s{i}" for i in range(7)]
    publish(target, descriptor(), [snapshot(n, messages=3) for n in names])
    first = rows(target)
    assert set(first) == {f"codex/{n}" for n in names}
    for n in names:
        assert [m["text"] for m in first[f"codex/{n}"]["recentMessages"]] == ["message 0", "message 1", "message 2"]
    # a second publication changes three rows (in the final transaction: the roots link
    # them), adds two new ones (written in batches before it) and keeps the rest as they are
    changed = [snapshot(n, messages=5) for n in names[:3]] + [snapshot(f"t{i}", messages=1) for i in range(2)]
    publish(target, descriptor(), changed, listed=[*names, "t0", "t1"], preserve=True)
    second = rows(target)
    assert len(second) == 9
    assert len(second["codex/s0"]["recentMessages"]) == 5
    assert len(second["codex/s5"]["recentMessages"]) == 3
    assert second["codex/s5"] == first["codex/s5"]
    assert [m["text"] for m in second["codex/t1"]["recentMessages"]] == ["message 0"]
    assert _assert_no_document_links_a_missing_cell(target) > 0


class FakeFault(Exception):
    pass


def test_a_fake_fault_in_the_final_index_transaction_keeps_the_prior_indexes_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(index_store, "ROW_BATCH", 2)
    env = make_env(tmp_path)
    target = env.target()
    names = [f"s{i}" for i in range(4)]
    publish(target, descriptor(), [snapshot(n, messages=2) for n in names])
    before = index(target)
    real_commit = Transaction.commit
    commits: list[int] = []

    def fail_the_final_index_commit(tx: Transaction) -> int:
        plan = tx._open()
        if any(cell in plan.ops for cell in (target.all_index_id(), target.recent_index_id())):
            raise FakeFault("the process dies here")
        commits.append(len(plan.ops))
        return real_commit(tx)

    monkeypatch.setattr(Transaction, "commit", fail_the_final_index_commit)
    more = [snapshot(n, messages=4) for n in names] + [snapshot(f"new{i}", messages=2) for i in range(5)]
    with pytest.raises(FakeFault):
        publish(target, descriptor(), more)
    monkeypatch.undo()

    assert len(commits) >= 3  # the new rows' batches were written before the roots
    assert index(target) == before
    assert _assert_every_indexed_manifest_is_complete(target) == {f"codex/{n}": 2 for n in names}
    assert _assert_no_document_links_a_missing_cell(target) > 0

    publish(target, descriptor(), more)
    assert _assert_every_indexed_manifest_is_complete(target) == {
        **{f"codex/{n}": 4 for n in names}, **{f"codex/new{i}": 2 for i in range(5)}}


def test_prior_rows_are_read_with_their_previews_left_in_their_cells_and_survive_a_status_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(index_store, "ROW_BATCH", 2)
    env = make_env(tmp_path)
    target = env.target()
    names = [f"s{i}" for i in range(5)]
    publish(target, descriptor(), [snapshot(n, messages=3) for n in names])
    before = rows(target)
    target.graphs.committed.clear()  # read the store, not this process's memory of it
    prior = index_store.read_prior(target.graphs, target.cells)
    assert all(isinstance(r["recentMessages"], StoredPreviews) for r in prior.rows.values())
    assert {k: unpacked_row(r) for k, r in prior.rows.items()} == before
    # an incomplete inventory that reads one session: the four others turn stale, their
    # rows planned again with the previews read back from their cells
    target.graphs.committed.clear()
    publish(target, descriptor(), [snapshot("s0", messages=4)], listed=["s0"], inventory_complete=False)
    after = rows(target)
    assert [after[f"codex/{n}"]["status"] for n in names] == ["complete"] + ["stale"] * 4
    for n in names[1:]:
        assert after[f"codex/{n}"]["recentMessages"] == before[f"codex/{n}"]["recentMessages"]
    assert len(after["codex/s0"]["recentMessages"]) == 4

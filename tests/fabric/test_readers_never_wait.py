"""Readers never take SQLite's write lock: opening a store, opening a target whose roots
exist, a read-only target and a commit that writes nothing all finish while another
process sits inside a `BEGIN IMMEDIATE` transaction on the same file.

The reading stores have a busy timeout of 0: had they asked for the write lock, they
would fail at once with `store-busy` instead of reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.fabric.cell_id import cell_id, health_cause
from lib.fabric.session_reader import SessionReader
from lib.fabric.sqlite_store import SQLiteStore
from lib.fabric.store import Labels
from lib.fabric.store_errors import ConflictError, StoreBusy
from lib.fabric.target import FabricTarget, TargetError
from tests.fabric.holders import hold_write_transaction
from tests.fabric.target_helpers import SPACE, descriptor, make_env, publish, snapshot


def _published(tmp_path: Path) -> tuple[Path, str]:
    env = make_env(tmp_path)
    publish(env.target(), descriptor(), [snapshot("s1"), snapshot("s2")])
    env.store.close()
    return tmp_path / "fabric.db", env.owner


@pytest.mark.parametrize("read_only", [True, False])
def test_opening_a_target_reads_its_sessions_while_another_process_holds_the_write_lock(
    tmp_path: Path, read_only: bool
) -> None:
    path, owner = _published(tmp_path)
    with hold_write_transaction(path) as writer:
        store = SQLiteStore(path, busy_timeout=0)
        target = FabricTarget.open(store, space=SPACE, owner=owner, read_only=read_only)
        sessions = target.published_sessions()
        rows = SessionReader(store, SPACE, owner).index("recent")
        store.close()
        assert writer.still_holding  # the reader finished inside the writer's transaction
        assert writer.release() == "rolled-back"
    assert sorted(sessions) == ["codex/s1", "codex/s2"]
    assert rows is not None and len(rows.sessions) == 2


def test_a_commit_that_only_reads_does_not_wait_for_a_writer_and_still_checks(tmp_path: Path) -> None:
    path, owner = _published(tmp_path)
    store = SQLiteStore(path, busy_timeout=0)
    health = cell_id(health_cause(SPACE, owner))
    head = store.head(SPACE)
    with hold_write_transaction(path) as writer:
        with store.transaction(SPACE, owner) as tx:
            assert tx.read(health) is not None
            assert tx.commit() == head
        with store.transaction(SPACE, owner) as tx, pytest.raises(StoreBusy):
            tx.write(health, {"changed": True})
            tx.commit()  # a commit that writes does wait (here: busy at once)
        assert writer.still_holding
    with store.transaction(SPACE, owner) as tx:
        tx.read(health)
        with store.transaction(SPACE, owner) as other:
            other.patch(health, set={"moved": True})
            other.commit()
        with pytest.raises(ConflictError):
            tx.commit()
    store.close()


def test_a_read_only_target_over_absent_roots_is_empty_and_writes_nothing(tmp_path: Path) -> None:
    path, owner = _published(tmp_path)
    other_space = "did:key:z6MkNeverWrittenSpace"
    with hold_write_transaction(path) as writer:
        store = SQLiteStore(path, busy_timeout=0)
        target = FabricTarget.open(store, space=other_space, owner=owner, read_only=True)
        assert target.published_sessions() == {}
        assert writer.still_holding
    assert store.head(other_space) == 0 and store.changes_since(other_space, 0) == []
    store.close()


def test_a_read_only_target_refuses_to_write(tmp_path: Path) -> None:
    path, owner = _published(tmp_path)
    store = SQLiteStore(path)
    target = FabricTarget.open(store, space=SPACE, owner=owner, read_only=True)
    head = store.head(SPACE)
    for attempt in (
        target.publication,
        target.begin_session_observation,
        lambda: target.publish_health({"state": "ready"}),
    ):
        with pytest.raises(TargetError) as caught:
            attempt()
        assert caught.value.code == "read-only-target"
    assert store.head(SPACE) == head
    assert not target.lock.held
    store.close()


def test_a_read_only_target_still_rejects_an_unprotected_root(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    stranger = "did:key:z6MkStranger"
    with env.store.transaction(SPACE, stranger) as tx:
        tx.write(cell_id(health_cause(SPACE, env.owner)), {"planted": True}, Labels((stranger,), (stranger,)))
        tx.commit()
    with pytest.raises(TargetError) as caught:
        env.target(read_only=True)
    assert caught.value.code == "unprotected-root"


def test_opening_a_target_with_a_missing_root_creates_only_the_missing_ones(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    seqs = {cell: env.store.read(SPACE, cell).seq for cell in (target.all_index_id(), target.health_cell_id())}
    with env.store.transaction(SPACE, env.owner) as tx:
        tx.delete(target.health_cell_id())
        tx.commit()
    env.target()
    assert env.store.read(SPACE, target.all_index_id()).seq == seqs[target.all_index_id()]
    assert env.store.read(SPACE, target.health_cell_id()).seq > seqs[target.health_cell_id()]

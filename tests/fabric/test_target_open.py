"""Opening a target: empty owner-protected roots created atomically, foreign roots refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.fabric.cell_id import cell_id, health_cause
from lib.fabric.schemas import SESSION_INDEX_SCHEMA
from lib.fabric.store import Labels
from lib.fabric.target import TargetError
from tests.fabric.target_helpers import SPACE, descriptor, index, make_env, publish, snapshot


def test_open_creates_every_empty_root_in_one_commit_with_owner_protection(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    roots = [
        target.recent_index_id(),
        target.all_index_id(),
        target.health_cell_id(),
        target.receipt_cell_id(),
    ]
    documents = env.store.read_many(SPACE, roots)
    assert set(documents) == set(roots)
    assert len({d.seq for d in documents.values()}) == 1  # one transaction
    for document in documents.values():
        assert document.labels == Labels((env.owner,), (env.owner,))
    assert documents[target.all_index_id()].value["schema"] == SESSION_INDEX_SCHEMA
    assert index(target, "recent")["sessions"] == []
    assert index(target)["generation"] == 0


def test_opening_again_writes_nothing_and_keeps_published_sessions(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    publish(env.target(), descriptor(), [snapshot("s1")])
    head = env.store.head(SPACE)
    reopened = env.target()
    assert env.store.head(SPACE) == head
    assert [row["nativeSessionId"] for row in index(reopened)["sessions"]] == ["s1"]


def test_a_populated_root_without_owner_protection_is_rejected_and_nothing_is_created(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    stranger = "did:key:z6MkStranger"
    health = cell_id(health_cause(SPACE, env.owner))
    with env.store.transaction(SPACE, stranger) as tx:
        tx.write(health, {"planted": True}, Labels((stranger,), (stranger,)))
        tx.commit()
    head = env.store.head(SPACE)
    with pytest.raises(TargetError) as caught:
        env.target()
    assert caught.value.code == "unprotected-root"
    assert health in caught.value.message
    # atomic: the index roots checked before the foreign health root were not created
    assert env.store.head(SPACE) == head
    assert env.store.read(SPACE, health).value == {"planted": True}


def test_a_root_the_owner_can_read_but_others_can_write_is_rejected(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    with env.store.transaction(SPACE, env.owner) as tx:
        tx.delete(target.receipt_cell_id())
        tx.commit()
    # recreated by a writer list that lets someone else change it
    with env.store.transaction(SPACE, env.owner) as tx:
        tx.write(target.receipt_cell_id(), {"receipts": []}, Labels((env.owner,), (env.owner, "did:key:z6MkOther")))
        tx.commit()
    with pytest.raises(TargetError) as caught:
        env.target()
    assert caught.value.code == "unprotected-root"


def test_opening_a_target_does_not_wait_for_a_running_publication(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    publication = env.target().publication()  # holds the publish lock
    try:
        reader = env.target(lock_timeout=0)
        assert reader.published_sessions() == {}
    finally:
        publication.close()

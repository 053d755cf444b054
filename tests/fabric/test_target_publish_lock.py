"""A target's publish lock is its store's: every handle on the database file, in any
process and however the URL is spelled, takes turns; only publications take it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lib.fabric.lock_files import lock_directory_for
from lib.fabric.publish_lock import PUBLISH_LOCK, PublishLockHeld, publish_lock
from tests.fabric.holders import hold_lock
from tests.fabric.target_helpers import SPACE, descriptor, index, make_env, publish, snapshot


def test_a_publication_gives_up_naming_the_process_that_holds_the_lock(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target(lock_timeout=0)
    other_spelling = f"sqlite:///{tmp_path}/./fabric.db"
    with hold_lock(other_spelling, SPACE, PUBLISH_LOCK, "--marker-publisher") as child:
        with pytest.raises(PublishLockHeld) as caught:
            target.publication()
    assert caught.value.code == "publish-lock-held"
    assert caught.value.holder["pid"] == child.pid
    assert f"pid {child.pid}" in caught.value.message
    assert "--marker-publisher" in caught.value.message
    assert not target.lock.held
    publish(target, descriptor(), [snapshot("after")])  # free once the child let go
    assert index(target)["generation"] == 1


def test_the_target_lock_is_the_stores_publish_lock_beside_the_database(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    assert target.lock.name == PUBLISH_LOCK and target.lock.space == SPACE
    assert target.lock.where.startswith(str(lock_directory_for(tmp_path / "fabric.db")))
    with target.lock:
        with pytest.raises(PublishLockHeld) as caught:
            publish_lock(env.store, SPACE, timeout=0).acquire()
        assert caught.value.holder["pid"] == os.getpid()


def test_publishing_health_takes_its_turn_in_the_publish_lock(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target(lock_timeout=0)
    with hold_lock(env.store_url, SPACE, PUBLISH_LOCK):
        with pytest.raises(PublishLockHeld):
            target.publish_health({"state": "ready"})
    assert env.store.read(SPACE, target.health_cell_id()).value.get("state") is None
    target.publish_health({"state": "ready"})  # free once the child let go
    assert env.store.read(SPACE, target.health_cell_id()).value["state"] == "ready"


def test_reading_does_not_wait_for_a_held_publish_lock(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    publish(env.target(), descriptor(), [snapshot("s1")])
    with hold_lock(env.store_url, SPACE, PUBLISH_LOCK):
        for read_only in (True, False):
            reader = env.target(lock_timeout=0, read_only=read_only)
            assert list(reader.published_sessions()) == ["codex/s1"]

"""The store-lock part of the store contract (`Store.lock`); StoreContract includes it,
so every backend passes it. Uses the contract's fixtures: `store` and `store_url`."""

from __future__ import annotations

import os
import threading

import pytest

from lib.fabric.publish_lock import PublishLockHeld
from lib.fabric.store import open_store
from lib.fabric.store_lock import LockHeld
from tests.fabric.holders import GUARD, hold_lock

SPACE = "did:key:z6MkLockSpace"
OTHER_SPACE = "did:key:z6MkOtherLockSpace"


class StoreLockContract:
    def test_a_lock_is_reentrant_in_its_object_and_excludes_another_object(self, store):
        first = store.lock(SPACE, "publish")
        first.acquire()
        first.acquire()
        assert first.held
        try:
            with pytest.raises(PublishLockHeld) as caught:
                store.lock(SPACE, "publish").acquire(timeout=0)
            assert caught.value.code == "publish-lock-held"
            assert caught.value.holder is not None
            assert caught.value.holder["pid"] == os.getpid()
            assert f"pid {os.getpid()}" in caught.value.message
            first.release()
            assert first.held  # one acquisition left
        finally:
            first.release()
        assert not first.held
        assert first.read_holder() is None
        with store.lock(SPACE, "publish", timeout=0):  # free again
            pass

    def test_locks_of_other_names_and_spaces_are_independent(self, store):
        with store.lock(SPACE, "publish", timeout=0):
            with store.lock(SPACE, "executor", timeout=0), store.lock(OTHER_SPACE, "publish", timeout=0):
                pass
            with pytest.raises(LockHeld) as caught:
                store.lock(SPACE, "publish").acquire(timeout=0)
            assert caught.value.name == "publish"

    def test_a_held_lock_of_another_name_says_which(self, store):
        with store.lock(SPACE, "executor"):
            with pytest.raises(LockHeld) as caught:
                store.lock(SPACE, "executor", timeout=0).acquire()
        assert caught.value.code == "executor-lock-held"
        assert not isinstance(caught.value, PublishLockHeld)
        assert "executor lock" in caught.value.message

    def test_a_lock_name_is_checked(self, store):
        with pytest.raises(ValueError):
            store.lock(SPACE, "../publish")

    def test_making_a_lock_writes_nothing_into_the_space(self, store):
        with store.lock(SPACE, "publish"):
            assert store.head(SPACE) == 0

    def test_two_threads_sharing_one_lock_object_take_turns(self, store):
        lock = store.lock(SPACE, "publish", timeout=GUARD)
        lock.acquire()
        waiting = threading.Event()
        lock.on_wait = lambda holder: waiting.set()
        order: list[str] = []
        worker = threading.Thread(
            target=lambda: (lock.acquire(), order.append("second"), lock.release())
        )
        worker.start()
        assert waiting.wait(GUARD)
        order.append("first-still-holding")
        lock.release()
        worker.join(GUARD)
        assert order == ["first-still-holding", "second"]

    def test_another_process_holding_the_lock_is_named_after_the_timeout(self, store, store_url):
        with hold_lock(store_url, SPACE, "publish", "--marker-publisher") as child:
            with pytest.raises(PublishLockHeld) as caught:
                store.lock(SPACE, "publish", timeout=0).acquire()
            assert caught.value.holder is not None
            assert caught.value.holder["pid"] == child.pid
            assert "--marker-publisher" in caught.value.message
            with store.lock(OTHER_SPACE, "publish", timeout=0):  # another space is free
                pass

    def test_a_waiter_sees_the_holder_then_takes_the_lock_when_it_is_released(
        self, store, store_url
    ):
        child = hold_lock(store_url, SPACE, "publish")
        waiting = threading.Event()
        seen: list[object] = []
        lock = store.lock(
            SPACE, "publish", timeout=GUARD,
            on_wait=lambda holder: (seen.append(holder), waiting.set()),
        )
        acquired = threading.Event()
        holder_while_held: list[object] = []

        def take() -> None:
            with lock:
                acquired.set()
                holder_while_held.append(lock.read_holder())

        worker = threading.Thread(target=take)
        worker.start()
        try:
            assert waiting.wait(GUARD), "the waiter never found the lock busy"
            assert not acquired.is_set()
        finally:
            assert child.release() == "released"
        assert acquired.wait(GUARD)
        worker.join(GUARD)
        assert seen[0]["pid"] == child.pid  # type: ignore[index]
        assert holder_while_held[0]["pid"] == os.getpid()  # type: ignore[index]
        assert lock.read_holder() is None

    def test_a_second_handle_on_the_store_takes_the_same_lock(self, store, store_url):
        again = open_store(store_url)
        try:
            with again.lock(SPACE, "publish"):
                with pytest.raises(PublishLockHeld):
                    store.lock(SPACE, "publish", timeout=0).acquire()
        finally:
            again.close()

"""SQLiteStore.wait_for_change: a commit from another handle (another connection, as
another process has) ends the wait long before its timeout. The timeout is 600 s, far
beyond the guard, so a wait that only timed out fails the test: no timing is asserted."""

from __future__ import annotations

import threading

from lib.fabric.store import open_store
from tests.fabric.store_contract import SPACE, put

GUARD = 60
A = "of:fid1:" + "A" * 43


def test_a_waiter_is_woken_by_a_commit_from_another_handle(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/fabric.db"
    waiter, writer = open_store(url), open_store(url)
    try:
        put(writer, "of:first", 1)
        head = waiter.head(SPACE)
        wake, returned = threading.Event(), threading.Event()

        def wait() -> None:
            waiter.wait_for_change(SPACE, head, 600, wake)
            returned.set()

        thread = threading.Thread(target=wait, daemon=True)
        thread.start()
        put(writer, A, {"from": "another handle"})
        assert returned.wait(GUARD), "the waiter did not hear of the commit"
        assert not wake.is_set()
        assert waiter.changes_since(SPACE, head) == [(A, head + 1)]
    finally:
        wake.set()
        waiter.close()
        writer.close()


def test_a_wait_returns_at_once_when_the_head_already_moved(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/fabric.db"
    store = open_store(url)
    try:
        put(store, "of:first", 1)
        head = store.head(SPACE)
        put(store, A, 2)
        returned = threading.Event()
        thread = threading.Thread(
            target=lambda: (store.wait_for_change(SPACE, head, 600, threading.Event()), returned.set()),
            daemon=True,
        )
        thread.start()
        assert returned.wait(GUARD), "a wait for a change already made did not return"
    finally:
        store.close()

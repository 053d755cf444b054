"""The SQLite store's file locks taken as flock(2) directly (issue 10): they exclude,
and are excluded by, the `filelock` package's lock on the same file (what earlier
versions took, so an older agentctl sharing the store still takes turns with this
one), a waiter gets the lock once its holder lets go, and a give really unlocks."""

from __future__ import annotations

import threading
from pathlib import Path

import filelock
import pytest

from lib.fabric.lock_files import FileStoreLock
from lib.fabric.store_lock import LockHeld
from tests.fabric.holders import GUARD, Holder

SPACE = "did:key:z6MkFlockSpace"

# an older agentctl's take: the filelock package on the same lock file, in another process
_FILELOCK_HOLDER = r"""
import sys
import filelock
lock = filelock.FileLock(sys.argv[1], mode=0o600, thread_local=False)
lock.acquire()
print("held", flush=True)
sys.stdin.readline()
lock.release()
print("released", flush=True)
"""


@pytest.fixture
def lock(tmp_path: Path) -> FileStoreLock:
    return FileStoreLock(str(tmp_path / "fabric.db"), SPACE, "receipts", timeout=0.2)


def test_a_lock_the_filelock_package_holds_in_another_process_excludes_this_one(lock: FileStoreLock):
    lock.acquire()  # creates the directory and the file, as a first take does
    lock.release()
    with Holder(_FILELOCK_HOLDER, [str(lock.path)], "held") as holder:
        with pytest.raises(LockHeld):
            lock.acquire()
        assert not lock.held
        holder.release()
    lock.acquire()
    assert lock.held
    lock.release()


def test_this_lock_excludes_the_filelock_package(lock: FileStoreLock):
    other = filelock.FileLock(str(lock.path), thread_local=False)
    with lock:
        with pytest.raises(filelock.Timeout):
            other.acquire(timeout=0)
    other.acquire(timeout=0)  # given back: free again
    other.release()


def test_two_lock_objects_exclude_each_other_and_a_give_unlocks(lock: FileStoreLock, tmp_path: Path):
    second = FileStoreLock(str(tmp_path / "fabric.db"), SPACE, "receipts", timeout=0)
    with lock:
        assert not second._take(0)
    for _ in range(3):
        with second:
            assert second.held
        with lock:
            assert lock.held


def test_a_waiter_takes_the_lock_once_its_holder_gives_it_back(lock: FileStoreLock, tmp_path: Path):
    waiter = FileStoreLock(str(tmp_path / "fabric.db"), SPACE, "receipts", timeout=GUARD)
    waiting = threading.Event()
    waiter.on_wait = lambda holder: waiting.set()
    taken = threading.Event()

    def wait_for_it() -> None:
        with waiter:
            taken.set()

    lock.acquire()
    thread = threading.Thread(target=wait_for_it)
    thread.start()
    assert waiting.wait(GUARD)
    assert not taken.is_set()
    lock.release()
    thread.join(GUARD)
    assert taken.is_set()


def test_a_forked_child_giving_back_its_parents_lock_leaves_the_parent_holding_it(lock: FileStoreLock):
    import multiprocessing

    lock.acquire()
    child = multiprocessing.get_context("fork").Process(target=lock._give)
    child.start()
    child.join(GUARD)
    assert child.exitcode == 0
    other = filelock.FileLock(str(lock.path), thread_local=False)
    with pytest.raises(filelock.Timeout):
        other.acquire(timeout=0)  # the parent still holds it
    lock.release()
    other.acquire(timeout=0)
    other.release()


def test_a_lock_taken_unowned_on_one_thread_is_given_back_on_another(lock: FileStoreLock, tmp_path: Path):
    """`take_unowned` / `give_unowned` (the SQLite key index's lock, held from a first
    sync's first batch commit to the index built at its end, on whichever thread): no
    thread owns it, and while it is taken another lock object cannot take the file."""
    other = FileStoreLock(str(tmp_path / "fabric.db"), SPACE, "receipts", timeout=0.2)
    taken: list[bool] = []
    thread = threading.Thread(target=lambda: taken.append(lock.take_unowned(0)))
    thread.start()
    thread.join()
    assert taken == [True]
    assert not other.take_unowned(0)  # held by the first object, though its thread has ended
    lock.give_unowned()  # from this thread
    assert other.take_unowned(0)
    other.give_unowned()

"""The publish lock serialises publications across processes and names a stuck holder."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lib.fabric.publish_lock import PublishLock, PublishLockHeld

GUARD = 60.0  # a guard against hangs, never a synchronisation
STORE = "sqlite:///tmp/example.sqlite3"
SPACE = "did:key:z6MkExampleSpace"

_HOLDER = """
import sys
from pathlib import Path
from lib.fabric.publish_lock import PublishLock
lock = PublishLock(sys.argv[1], sys.argv[2], directory=Path(sys.argv[3]))
lock.acquire()
print("held", flush=True)
sys.stdin.readline()
lock.release()
print("released", flush=True)
"""


def _hold_in_child(directory: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, STORE, SPACE, str(directory), "--marker-publisher"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "held"
    return child


def _finish(child: subprocess.Popen[str]) -> str:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("\n")
    child.stdin.flush()
    line = child.stdout.readline().strip()
    child.wait(GUARD)
    return line


def test_a_publisher_that_times_out_names_the_process_holding_the_lock(tmp_path: Path) -> None:
    child = _hold_in_child(tmp_path)
    try:
        with pytest.raises(PublishLockHeld) as caught:
            PublishLock(STORE, SPACE, directory=tmp_path, timeout=0.2).acquire()
        assert caught.value.holder is not None
        assert caught.value.holder["pid"] == child.pid
        assert f"pid {child.pid}" in caught.value.message
        assert "--marker-publisher" in caught.value.message
        assert caught.value.code == "publish-lock-held"
    finally:
        _finish(child)


def test_a_second_publisher_waits_for_the_holder_and_then_takes_the_lock(tmp_path: Path) -> None:
    child = _hold_in_child(tmp_path)
    waiting = threading.Event()
    seen_holder: list[object] = []
    lock = PublishLock(
        STORE,
        SPACE,
        directory=tmp_path,
        timeout=GUARD,
        on_wait=lambda holder: (seen_holder.append(holder), waiting.set()),
    )
    acquired = threading.Event()
    holder_while_held: list[object] = []

    def publish() -> None:
        lock.acquire()
        acquired.set()
        holder_while_held.append(lock.read_holder())
        lock.release()

    worker = threading.Thread(target=publish)
    worker.start()
    assert waiting.wait(GUARD), "the second publisher never found the lock busy"
    assert not acquired.is_set()
    assert _finish(child) == "released"
    assert acquired.wait(GUARD)
    worker.join(GUARD)
    assert seen_holder[0]["pid"] == child.pid  # type: ignore[index]
    assert holder_while_held[0]["pid"] != child.pid  # type: ignore[index]
    assert lock.read_holder() is None


def test_two_threads_sharing_one_lock_object_still_take_turns(tmp_path: Path) -> None:
    lock = PublishLock(STORE, SPACE, directory=tmp_path, timeout=GUARD)
    lock.acquire()
    lock.acquire()  # reentrant in the holding thread
    waiting = threading.Event()
    lock.on_wait = lambda holder: waiting.set()
    order: list[str] = []
    worker = threading.Thread(
        target=lambda: (lock.acquire(), order.append("second"), lock.release())
    )
    worker.start()
    assert waiting.wait(GUARD)
    lock.release()
    order.append("first-still-holding")
    lock.release()
    worker.join(GUARD)
    assert order == ["first-still-holding", "second"]

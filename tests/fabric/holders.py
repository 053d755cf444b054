"""Real child processes that hold something until the test lets them go.

Each child prints one line once it holds what it was asked to hold, then waits for a
line on stdin (the test's go-ahead), lets go, and prints one more line. The tests
synchronise on those lines only: no sleeps.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GUARD = 60.0  # a guard against hangs, never a synchronisation

_LOCK_HOLDER = r"""
import sys
from lib.fabric.store import open_store
store = open_store(sys.argv[1])
lock = store.lock(sys.argv[2], sys.argv[3])
lock.acquire()
print("held", flush=True)
sys.stdin.readline()
lock.release()
store.close()
print("released", flush=True)
"""

# BEGIN IMMEDIATE takes SQLite's write lock; the uncommitted insert makes the write
# transaction real. The child confirms it still holds it when told to let go.
_WRITE_HOLDER = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO meta (key, value) VALUES ('heldByTest', '1')")
print("writing", flush=True)
sys.stdin.readline()
held = conn.in_transaction
conn.execute("ROLLBACK")
conn.close()
print("rolled-back" if held else "lost-transaction", flush=True)
"""


class Holder:
    """A child holding something; `release()` lets it go and returns its last line."""

    def __init__(self, script: str, args: list[str], expect: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", script, *args],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if line != expect:
            self.process.kill()
            self.process.wait(GUARD)
            raise AssertionError(f"the holder child said {line!r}, not {expect!r}")

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def still_holding(self) -> bool:
        return self.process.poll() is None

    def release(self) -> str:
        if not self.still_holding:
            return ""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline().strip()
        self.process.wait(GUARD)
        return line

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def hold_lock(store_url: str, space: str, name: str, *marker: str) -> Holder:
    """A child process holding `open_store(store_url).lock(space, name)`; `marker`
    arguments only show up in its command line (the holder note)."""
    return Holder(_LOCK_HOLDER, [store_url, space, name, *marker], "held")


def hold_write_transaction(database: str | Path) -> Holder:
    """A child process inside an open `BEGIN IMMEDIATE` transaction on the file."""
    return Holder(_WRITE_HOLDER, [str(database)], "writing")

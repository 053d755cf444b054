"""Waiting on other processes in tests: a polled condition with a generous guard, and
whether a process has ended."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

GUARD_SECONDS = 60  # reaching it is a failure, never a pass


def poll(condition: Callable[[], object], what: str, guard: float = GUARD_SECONDS) -> None:
    """Wait for `condition()`, a state another process reaches; fail past the guard."""
    deadline = time.monotonic() + guard
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def gone(pid: int) -> bool:
    """The process has ended (a zombie nobody has reaped yet counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")

"""Hand freed memory back to the system once a large session is done with.

After a large session, CPython has freed its parsed events and prepared text to the C
allocator, but glibc's malloc keeps those heap pages resident (and scattered between
the few objects that live on). The next large session's read then needs fresh memory
(its line and decoded text are single huge allocations, which no freed heap page can
hold) on top of them, so a sync's peak would depend on what came before it rather than
on its largest session. `malloc_trim(0)` returns the free pages.

prepare_session notes each large session; the caller releases at the point where that
session's memory is free again, before the next read (cli/pipeline.py ReadStage).
Elsewhere than glibc (musl, macOS) releasing does nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["note_large_session", "release_after_large_session"]

_pending = False
_trim: Callable[[int], Any] | None | bool = False  # False: not looked up yet


def note_large_session() -> None:
    """A large session was prepared: its memory is worth handing back once it is free."""
    global _pending
    _pending = True


def release_after_large_session() -> bool:
    """Return freed heap pages to the system if a large session was prepared since the
    last call (a few milliseconds); otherwise do nothing. True when it released."""
    global _pending
    if not _pending:
        return False
    _pending = False
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def _malloc_trim() -> Callable[[int], Any] | None:
    global _trim
    if _trim is False:
        _trim = None
        if sys.platform.startswith("linux"):
            import ctypes  # only once a large session was read: not on every start-up

            try:
                _trim = ctypes.CDLL(None).malloc_trim  # glibc only
            except (AttributeError, OSError):
                _trim = None
    return _trim  # type: ignore[return-value]

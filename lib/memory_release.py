"""Hand freed memory back to the system once a large session is done with.

After a large session, CPython has freed its parsed events and prepared text to the C
allocator, but glibc's malloc keeps those heap pages resident (and scattered between
the few objects that live on). The next large session's read then needs fresh memory
(its line and decoded text are single huge allocations, which no freed heap page can
hold) on top of them, so a sync's peak would depend on what came before it rather than
on its largest session. `malloc_trim(0)` returns the free pages.

prepare_session notes each large session; the caller releases at the point where that
session's memory is free again, before the next read (cli/pipeline.py ReadStage).

A publication's commit releases too, once every read is answered and before the commit
(publish_stage.py): the reads leave freed heap pages resident (a first sync of 25,000
threads about 12 MB), and the commit's largest allocations (the index roots' texts and
their stored forms, megabytes each) fit none of those freed chunks, so they came on top
(session 27: the 25,000-thread first sync's peak 3 MB lower); and again inside the index
commit (index_store.commit_indexes), once the rows' objects are freed and before the
final transaction writes the roots' texts (first27's trial: 112 → 108 MB at 25,000).
Elsewhere than glibc (musl, macOS) releasing does nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["note_large_session", "release_after_large_session", "release_freed_memory"]

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
    return release_freed_memory()


def release_freed_memory() -> bool:
    """Return the freed heap pages to the system now (a few milliseconds). True when it
    released (glibc)."""
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

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

A large allocation the heap cannot hold from its free space is mapped on its own, always
(`map_large_allocations`, when a stage starts to run: lib/pipeline/runner.py). glibc maps
one of 128 KiB or more by itself and unmaps it when freed, but raises that threshold to
the size of each mapped block freed (up to 32 MiB): after one large read answer or index
text, every later one grew the heap instead, which it left grown and scattered, and the
sync's peak grew with the collection (issue 14 goal 4, session 30: a listing idle sync of 25,000 threads
69.9 → 67.9 MB, a first sync 85-88 → 82.5 MB, for about 2% more CPU: each such block
is mapped and faulted in anew).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["map_large_allocations", "note_large_session", "release_after_large_session", "release_freed_memory"]

_pending = False
_trim: Callable[[int], Any] | None | bool = False  # False: not looked up yet
_mapping: bool | None = None  # None: not asked yet
_M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)
LARGE_BYTES = 128 * 1024  # glibc's own starting threshold, kept


def map_large_allocations() -> bool:
    """From now on, an allocation of LARGE_BYTES or more that the heap's free space cannot
    hold is mapped on its own and unmapped when freed, never grows the heap (the module's
    docstring). True where that holds (glibc)."""
    global _mapping
    if _mapping is None:
        mallopt = _glibc("mallopt")  # once a stage runs: not on every start-up
        _mapping = mallopt is not None and mallopt(_M_MMAP_THRESHOLD, LARGE_BYTES) == 1
    return _mapping


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
        _trim = _glibc("malloc_trim")  # only once a large session was read: not on every start-up
    return _trim  # type: ignore[return-value]


def _glibc(name: str) -> Callable[..., Any] | None:
    """glibc's function `name`, or None elsewhere (musl, macOS); ctypes imported only here."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return getattr(ctypes.CDLL(None), name)
    except (AttributeError, OSError):
        return None

"""Group commit: what arrives while one commit is on its way goes together into the next.

The ledger's durable writes, the receipt commits and the worker's session refreshes are
each slow (an fsync, a store transaction, a publication) and asked for by many threads
at once. `GroupCommit(commit).submit(item)` blocks until a commit holding `item` has
finished and raises what that commit raised (a failed commit fails its own items only,
never the next ones). The first caller of a batch is its leader: it waits for the commit
before it to end, closes the batch and runs `commit(items)` for everyone in it; the
others wait on their batch alone, so the end of a commit wakes only the threads it
concerns (one condition for all made every waiter re-check on every commit).

`submit_later(item, covers, batches=n)` is for an item that any commit beginning after
the call serves as well (the worker's refresh after an outcome): while a batch already
waits to be committed, it does not join that batch but waits for it to begin; when that
batch holds an item that `covers` it, the item is served by that batch (it waits for it
and raises its error) and is never committed itself; otherwise it looks at the next
waiting batch the same way, at most `n` of them, then joins the open batch as `submit`
does. So a later request for the same thing that arrives meanwhile makes one commit of
two, and the item waits at most `n` batches longer than `submit` would.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

# At most this long a leader waits for its batch to hold as many items as the last commit
# did (nothing when the last commit held one: a lone caller never waits)
GATHER_SECONDS = 0.001


class _Batch(Generic[T]):
    __slots__ = ("items", "may_start", "begun", "done", "error")

    def __init__(self) -> None:
        self.items: list[T] = []
        self.may_start = threading.Event()  # the commit before this one has ended
        self.begun = threading.Event()  # closed: later items join the next batch
        self.done = threading.Event()
        self.error: BaseException | None = None


class GroupCommit(Generic[T]):
    def __init__(self, commit: Callable[[list[T]], None], *, gather: float = GATHER_SECONDS) -> None:
        self._commit = commit
        self._gather = gather
        self._lock = threading.Lock()
        self._filled = threading.Condition(self._lock)  # an item joined a gathering batch
        self._gathering = False
        self._last = 0  # items the last commit held
        self._open: _Batch[T] = _Batch()  # the batch new items join
        self._running = False
        # commits run and the items they held (the bench prints items a commit)
        self.commits = 0
        self.committed = 0

    def submit(self, item: T) -> None:
        """Commit `item` with whatever else arrives meanwhile; raises its commit's error."""
        with self._lock:
            batch = self._open
            batch.items.append(item)
            leader = len(batch.items) == 1
            if leader and not self._running:
                batch.may_start.set()
            elif self._gathering:
                self._filled.notify()
        if leader:
            self._lead(batch)
        else:
            batch.done.wait()
        if batch.error is not None:
            raise batch.error

    def submit_later(self, item: T, covers: Callable[[T], bool], *, batches: int = 1) -> None:
        """Served by a commit that begins after this call: up to `batches` batches that
        each already wait when the one before begins go first, and one of them holding
        an item that `covers` this one serves it (see the module's docstring)."""
        for _ in range(batches):
            with self._lock:
                waiting = self._open if self._open.items else None
            if waiting is None:  # nothing waits: no later request to share with, go now
                break
            waiting.begun.wait()
            if any(covers(other) for other in waiting.items):  # it began after this call
                waiting.done.wait()
                if waiting.error is not None:
                    raise waiting.error
                return
        self.submit(item)

    def queued(self) -> int:
        """How many items wait for the next commit (not the one on its way)."""
        with self._lock:
            return len(self._open.items)

    def _lead(self, batch: _Batch[T]) -> None:
        batch.may_start.wait()
        with self._lock:
            self._fill(batch)
            self._running = True
            self._open = _Batch()  # later items join the next batch
            items = list(batch.items)
            batch.begun.set()
        try:
            self._commit(items)
        except BaseException as exc:  # handed to every caller of the batch
            batch.error = exc
        finally:
            with self._lock:
                self._running = False
                self.commits += 1
                self.committed += len(items)
                self._last = len(items)
                following = self._open
                if following.items:  # its leader waits for this commit to end
                    following.may_start.set()
            batch.done.set()

    def _fill(self, batch: _Batch[T]) -> None:
        """Under the lock: while the batch holds fewer items than the last commit, wait
        up to `gather` seconds for more (see GATHER_SECONDS), so that batches stay as
        large as the callers' concurrency makes them and do not shrink for a moment's
        scheduling (a small batch pays a commit's fixed cost for few items)."""
        if len(batch.items) >= self._last or self._gather <= 0:
            return
        deadline = time.monotonic() + self._gather
        self._gathering = True
        try:
            while len(batch.items) < self._last:
                left = deadline - time.monotonic()
                if left <= 0 or not self._filled.wait(left):
                    return
        finally:
            self._gathering = False

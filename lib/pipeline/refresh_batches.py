"""Coalesced session refreshes for the command worker (a group commit).

Every command refreshes its session once it is active and again after its outcome, so
a busy executor asks for many refreshes at once. `RefreshBatches.refresh(target,
driver, id)` blocks until a publication that began after the request has committed
that session; requests that arrive while one publication runs wait and go together
into the next one. Each caller still sees its own session refreshed after its call
(what the spec's refresh promises), at one index commit per batch instead of one per
request. A session asked for twice in one batch is read once.

`refresh_later` is the refresh after a command's outcome (session 23): it has the same
promise (a publication that began after the request commits the session), but while
batches already wait it lets up to LATER_BATCHES of them begin first, and is served by
one that reads the same session (in a busy executor, the session's next command's
`onSessionActive` refresh); otherwise it joins the open batch as `refresh` does. With
nothing waiting it goes at once. So the two refreshes of consecutive commands on one
session often share one read (1,000 commands at once in the bench: 1.88 session reads a
command before, 1.10 after), at the cost of at most LATER_BATCHES batches' delay for a
refresh that runs in the background anyway. A refresh that has begun is never skipped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from lib.drivers.base import AgentDriver
from lib.fabric.target import FabricTarget
from lib.group_commit import GroupCommit
from lib.pipeline.prepared_reads import PreparedReads
from lib.pipeline.refresh import refresh_sessions

# how many already waiting batches the refresh after an outcome lets begin first (1: 1.52
# reads a command in the bench, 2: 1.18, 3: 1.10, 5: 1.10)
LATER_BATCHES = 3


class RefreshBatches:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._targets: dict[int, GroupCommit[tuple[AgentDriver, str]]] = {}
        # per target: the last preparation of each small session, reused when it is read
        # again unchanged (prepared_reads.py)
        self._kept: dict[int, PreparedReads] = {}

    def refresh(self, target: FabricTarget, driver: AgentDriver, native_session_id: str) -> None:
        """Publish the session's current state; raises what its batch's publication raised."""
        self._group(target).submit((driver, native_session_id))

    def refresh_later(self, target: FabricTarget, driver: AgentDriver, native_session_id: str) -> None:
        """`refresh`, served by a batch that was already waiting when it reads the same session."""
        key = (driver.source.id, native_session_id)
        self._group(target).submit_later(
            (driver, native_session_id), lambda item: (item[0].source.id, item[1]) == key, batches=LATER_BATCHES
        )

    def _group(self, target: FabricTarget) -> GroupCommit[tuple[AgentDriver, str]]:
        with self._lock:
            group = self._targets.get(id(target))
            if group is None:
                kept = self._kept[id(target)] = PreparedReads()
                group = self._targets[id(target)] = GroupCommit(lambda batch: _refresh_batch(target, batch, kept))
        return group


def _refresh_batch(target: FabricTarget, batch: list[tuple[AgentDriver, str]], kept: PreparedReads) -> None:
    """One publication for the batch; a session asked for twice is read once."""
    sessions = {(driver.source.id, sid): (driver, sid) for driver, sid in batch}
    refresh_sessions(target, list(sessions.values()), kept=kept)


class BackgroundRefreshes:
    """Refreshes that run beside the caller instead of before its next step (the
    worker's refresh after a command's outcome). A session that already waits for a
    refresh not started yet does not queue another: that one reads the session as it
    is then. `wait()` returns once every requested refresh has run."""

    def __init__(self, refresh: Callable[[AgentDriver, str], None], *, max_workers: int) -> None:
        self._refresh = refresh
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="agentctl-refresh")
        self._lock = threading.Lock()
        self._queued: set[tuple[str, str]] = set()
        self._futures: set[Future[None]] = set()

    def request(self, driver: AgentDriver, native_session_id: str) -> None:
        key = (driver.source.id, native_session_id)
        with self._lock:
            if key in self._queued:
                return
            self._queued.add(key)
            future = self._pool.submit(self._run, key, driver, native_session_id)
            self._futures.add(future)
        future.add_done_callback(self._done)

    def _run(self, key: tuple[str, str], driver: AgentDriver, native_session_id: str) -> None:
        with self._lock:
            self._queued.discard(key)  # from now on a new request queues another
        self._refresh(driver, native_session_id)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._futures.discard(future)

    def wait(self) -> None:
        while True:
            with self._lock:
                pending = list(self._futures)
            if not pending:
                return
            wait(pending)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

"""Coalesced session refreshes for the command worker (a group commit).

Every command refreshes its session once it is active and again after its outcome, so
a busy executor asks for many refreshes at once. `RefreshBatches.refresh(target,
driver, id)` blocks until a publication that began after the request has committed
that session; requests that arrive while one publication runs wait and go together
into the next one. Each caller still sees its own session refreshed after its call
(what the spec's refresh promises), at one index commit per batch instead of one per
request. A session asked for twice in one batch is read once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from lib.drivers.base import AgentDriver
from lib.fabric.target import FabricTarget
from lib.group_commit import GroupCommit
from lib.pipeline.refresh import refresh_sessions


class RefreshBatches:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._targets: dict[int, GroupCommit[tuple[AgentDriver, str]]] = {}

    def refresh(self, target: FabricTarget, driver: AgentDriver, native_session_id: str) -> None:
        """Publish the session's current state; raises what its batch's publication raised."""
        with self._lock:
            group = self._targets.get(id(target))
            if group is None:
                group = self._targets[id(target)] = GroupCommit(lambda batch: _refresh_batch(target, batch))
        group.submit((driver, native_session_id))


def _refresh_batch(target: FabricTarget, batch: list[tuple[AgentDriver, str]]) -> None:
    """One publication for the batch; a session asked for twice is read once."""
    sessions = {(driver.source.id, sid): (driver, sid) for driver, sid in batch}
    refresh_sessions(target, list(sessions.values()))


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

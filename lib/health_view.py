"""Reading the host's health (`agentctl health`): the published record, its age, and
whether the host that published it still holds the executor lock (lib/health.py
builds the record; this reads it back)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lib.errors import ExitCode
from lib.executor import EXECUTOR_LOCK
from lib.fabric.graph_read import GraphReadError, read_graph_value
from lib.fabric.store import open_store
from lib.fabric.store_lock import LockHeld
from lib.health import utc_now


@dataclass(frozen=True)
class HealthView:
    """What `agentctl health` shows: the published record (None when nothing is), its
    age, and whether the host that published it holds the executor lock.

    `lock_holder` is the executor lock holder's pid and hostname (never its command
    line, which may hold a prompt), None when the lock is free or its holder unknown."""

    record: dict[str, Any] | None
    age_seconds: float | None
    lock_held: bool
    lock_holder: dict[str, Any] | None

    @property
    def host_running(self) -> bool:
        """The lock is held, by the host that published the record when the holder is
        known (an `agentctl command run` holding it is not that host)."""
        if not self.lock_held or self.record is None:
            return False
        if self.lock_holder is None:
            return True
        host = self.record.get("host") or {}
        return (self.lock_holder.get("pid") == host.get("pid")
                and self.lock_holder.get("hostname") == host.get("hostname"))

    @property
    def status(self) -> str | None:
        return None if self.record is None else self.record.get("status")

    @property
    def stale(self) -> bool:
        """The record claims a live host, but no such host holds the executor lock."""
        return self.record is not None and self.status != "stopped" and not self.host_running

    @property
    def exit_code(self) -> ExitCode:
        """0 ready; 3 a running host that is not ready; 1 no host running (stopped or a
        stale record); 5 nothing published."""
        if self.record is None:
            return ExitCode.NOT_FOUND
        if self.status == "stopped" or not self.host_running:
            return ExitCode.FAILURE
        return ExitCode.OK if self.status == "ready" else ExitCode.PARTIAL

    def to_wire(self) -> dict[str, Any]:
        """The record plus `ageSeconds` and `hostRunning` (and `executorLockHolder`)."""
        return {**(self.record or {}), "ageSeconds": self.age_seconds, "hostRunning": self.host_running,
                "executorLockHolder": self.lock_holder}


def _parse_iso(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def published_health(target: Any) -> dict[str, Any] | None:
    """The health record a target holds, hydrated; None when none was published (the
    root is absent, or only the empty root a target's opening wrote is there)."""
    try:
        value = read_graph_value(target.store, target.space, target.health_cell_id())
    except GraphReadError as exc:
        if exc.code == "missing-cell":
            return None
        raise
    if not isinstance(value, dict) or "status" not in value:
        return None
    return value


def executor_lock_holder(store_url: str, space: str) -> tuple[bool, dict[str, Any] | None]:
    """(held, holder's pid and hostname) of the executor lock, tried without waiting on
    a store handle of its own and released at once when it was free."""
    with open_store(store_url) as store:
        lock = store.lock(space, EXECUTOR_LOCK, timeout=0)
        try:
            lock.acquire(timeout=0)
        except LockHeld as exc:
            holder = {k: exc.holder[k] for k in ("pid", "hostname") if k in exc.holder} if exc.holder else None
            return True, holder or None
        lock.release()
        return False, None


def read_health(workspace: Any, now: datetime | None = None) -> HealthView:
    """The published health of the workspace's target, read-only, and whether a host
    runs (see HealthView). Nothing is created when no store exists."""
    if not workspace.store_exists():
        return HealthView(None, None, False, None)
    target = workspace.open_target(read_only=True)
    record = published_health(target)
    if record is None:
        return HealthView(None, None, False, None)
    held, holder = executor_lock_holder(workspace.resolved_store_url, target.space)
    clock = workspace.clock() if hasattr(workspace, "clock") else None
    moment = now or (clock() if clock else utc_now())
    updated = _parse_iso((record.get("host") or {}).get("updatedAt"))
    age = None if updated is None else round(max(0.0, (moment - updated).total_seconds()), 3)
    return HealthView(record, age, held, holder)

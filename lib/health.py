"""The host's health: what it is doing, published as one record, and read back by `agentctl health`.

    health = HostHealth(pid=os.getpid(), hostname=..., version=..., interval_seconds=300,
                        cells={"recentIndex": ..., ...})
    health.set_status("running"); health.admitting(True)
    if health.version != published: target.publish_health(health.record())

`HostHealth` is thread-safe: the host's collection thread, command workers and signal
handling all report to one object; every change raises `version`, so the host
publishes only when it moved. The record (camelCase, plain JSON) is what
`FabricTarget.publish_health` stores; its arrays (`sources`, `activity`, `reasons`,
each source's `errors`) become stable array cells.

What the record never holds: prompt text, command payloads, provider environments,
stderr or key material. Command events carry the command id, its producer, the
receipt status, the source and the session only; messages are cut to MAX_MESSAGE.

`read_health(workspace)` reads the published record (read-only), checks whether a
process holds the executor lock, and says what `agentctl health` exits with.
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lib.errors import ExitCode
from lib.executor import EXECUTOR_LOCK
from lib.fabric.graph_read import GraphReadError, read_graph_value
from lib.fabric.store import open_store
from lib.fabric.store_lock import LockHeld
from lib.receipts import CommandReceipt, format_utc_iso
from lib.types import SourceDescriptor, normalize_source_id

HOST_STATUSES = ("starting", "running", "stopping", "stopped")
OVERALL_STATUSES = ("starting", "ready", "degraded", "stopping", "stopped")
LIFECYCLES = ("starting", "running", "failed", "stopped")
MAX_ACTIVITY = 200
MAX_SOURCE_ERRORS = 20
MAX_MESSAGE = 500
FAILED_RECEIPT_STATUSES = frozenset({"failed", "unknown"})
_SCALARS = (str, int, float, bool, type(None))


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _message(text: Any) -> str:
    """A message for the record: a string, cut to MAX_MESSAGE characters."""
    text = text if isinstance(text, str) else str(text)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _field(value: Any) -> Any:
    """An event field as plain JSON: scalars as they are, anything else as a short string."""
    if isinstance(value, str):
        return _message(value)
    if isinstance(value, _SCALARS):
        return value
    return _message(value)


class HostHealth:
    """The live health of one host and the record it publishes (see the module doc)."""

    def __init__(
        self,
        *,
        pid: int,
        hostname: str,
        version: str,
        interval_seconds: float,
        cells: dict[str, Any],
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._lock = threading.RLock()
        self._clock = clock or _utc_now
        now = self._now()
        self._host = {"pid": pid, "hostname": hostname, "version": version, "startedAt": now}
        self._cells = copy.deepcopy(dict(cells))
        self._interval = interval_seconds
        self._updated_at = now
        self._version = 0
        self._status = "starting"
        self._overall = "starting"
        self._since = now
        self._sources: dict[str, dict[str, Any]] = {}
        self._admitting = False
        self._pending_receipts = 0
        self._failed_commands = 0
        self._last_command_error: dict[str, Any] | None = None
        self._collection: dict[str, Any] = {
            "intervalSeconds": interval_seconds,
            "running": False,
            "pending": False,
            "lastStartedAt": None,
            "lastFinishedAt": None,
            "lastComplete": None,
            "lastSessionCount": None,
            "lastError": None,
        }
        self._activity: deque[dict[str, Any]] = deque(maxlen=MAX_ACTIVITY)
        self._seq = 0

    # -- changes ---------------------------------------------------------------------------

    def _now(self) -> str:
        return format_utc_iso(self._clock())

    def _changed(self, now: str | None = None) -> None:
        """Called under the lock after every change."""
        now = now or self._now()
        self._version += 1
        self._updated_at = now
        overall, _reasons = self._assess()
        if overall != self._overall:
            self._overall = overall
            self._since = now

    def _event(self, kind: str, fields: Mapping[str, Any], now: str) -> None:
        self._seq += 1
        event = {key: _field(value) for key, value in fields.items()
                 if key not in ("seq", "at", "kind") and value is not None}
        self._activity.append({"seq": self._seq, "at": now, "kind": kind, **event})

    def set_status(self, status: str) -> None:
        if status not in HOST_STATUSES:
            raise ValueError(f"a host status is one of {', '.join(HOST_STATUSES)}, not {status!r}")
        with self._lock:
            if status != self._status:
                self._status = status
                self._changed()

    def _source(self, source_id: str) -> dict[str, Any]:
        key = normalize_source_id(source_id)
        entry = self._sources.get(key)
        if entry is None:
            entry = self._sources[key] = {
                "id": key, "driver": None, "lifecycle": "starting", "capabilities": {},
                "complete": None, "sessionCount": None, "errors": [],
            }
        return entry

    def _source_lifecycle(self, descriptor: SourceDescriptor, lifecycle: str) -> None:
        with self._lock:
            now = self._now()
            entry = self._source(descriptor.id)
            entry["driver"] = descriptor.driver
            entry["capabilities"] = descriptor.capabilities.to_wire()
            entry["lifecycle"] = lifecycle
            self._event(f"source-{lifecycle}", {"sourceId": entry["id"]}, now)
            self._changed(now)

    def source_starting(self, descriptor: SourceDescriptor) -> None:
        self._source_lifecycle(descriptor, "starting")

    def source_running(self, descriptor: SourceDescriptor) -> None:
        self._source_lifecycle(descriptor, "running")

    def source_failed(self, source_id: str, code: str, message: str) -> None:
        with self._lock:
            now = self._now()
            entry = self._source(source_id)
            entry["lifecycle"] = "failed"
            self._source_error(entry, {"code": code, "message": _message(message), "at": now})
            self._event("source-failed", {"sourceId": entry["id"], "code": code, "message": message}, now)
            self._changed(now)

    def source_stopped(self, source_id: str) -> None:
        with self._lock:
            now = self._now()
            entry = self._source(source_id)
            entry["lifecycle"] = "stopped"
            self._event("source-stopped", {"sourceId": entry["id"]}, now)
            self._changed(now)

    @staticmethod
    def _source_error(entry: dict[str, Any], error: dict[str, Any]) -> None:
        entry["errors"] = [*entry["errors"], error][-MAX_SOURCE_ERRORS:]

    # -- collections -----------------------------------------------------------------------

    def collection_started(self) -> None:
        with self._lock:
            now = self._now()
            self._collection.update(running=True, lastStartedAt=now)
            self._event("collection-started", {}, now)
            self._changed(now)

    def collection_finished(self, outcome: Mapping[str, Any]) -> None:
        """outcome: {"complete", "sessionCount", "sources": [{"sourceId", "complete",
        "listed", "errorCount"}], "errors": [{"sourceId"?, "code", "message"}]}."""
        with self._lock:
            now = self._now()
            complete = bool(outcome.get("complete"))
            count = outcome.get("sessionCount")
            self._collection.update(running=False, lastFinishedAt=now, lastComplete=complete,
                                    lastSessionCount=count, lastError=None)
            for source in outcome.get("sources") or ():
                entry = self._source(source["sourceId"])
                entry["complete"] = bool(source.get("complete"))
                entry["sessionCount"] = source.get("listed")
            for error in outcome.get("errors") or ():
                if error.get("sourceId"):
                    self._source_error(self._source(error["sourceId"]), {
                        "code": error.get("code") or "error", "message": _message(error.get("message") or ""),
                        "at": now,
                    })
            errors = len(outcome.get("errors") or ())
            self._event("collection-finished",
                        {"complete": complete, "sessionCount": count, "errorCount": errors}, now)
            self._changed(now)

    def collection_failed(self, code: str, message: str) -> None:
        with self._lock:
            now = self._now()
            self._collection.update(running=False, lastFinishedAt=now, lastComplete=False,
                                    lastError={"code": code, "message": _message(message), "at": now})
            self._event("collection-failed", {"code": code, "message": message}, now)
            self._changed(now)

    def collection_pending(self, flag: bool) -> None:
        with self._lock:
            if bool(flag) != self._collection["pending"]:
                self._collection["pending"] = bool(flag)
                self._changed()

    # -- commands --------------------------------------------------------------------------

    def admitting(self, flag: bool) -> None:
        with self._lock:
            if bool(flag) != self._admitting:
                self._admitting = bool(flag)
                self._changed()

    def pending_receipts(self, count: int) -> None:
        with self._lock:
            if count != self._pending_receipts:
                self._pending_receipts = count
                self._changed()

    def command_receipt(self, receipt: CommandReceipt) -> None:
        """A receipt the worker produced: an activity event (identities and status only);
        a failed or unknown one counts as a failed command and becomes lastError."""
        with self._lock:
            now = self._now()
            self._event("command", {
                "commandId": receipt.command_id, "producer": receipt.producer, "status": receipt.status,
                "sourceId": receipt.source_id, "nativeSessionId": receipt.native_session_id,
            }, now)
            if receipt.status in FAILED_RECEIPT_STATUSES:
                self._failed_commands += 1
                code = receipt.error.code if receipt.error else receipt.status
                message = receipt.error.message if receipt.error else f"command {receipt.command_id} {receipt.status}"
                self._last_command_error = {"code": code, "message": _message(message), "at": now}
            self._changed(now)

    def command_task_failed(
        self, command_id: str, producer: str | None, source_id: str, native_session_id: str,
        code: str, message: str,
    ) -> None:
        """A command task that raised (no receipt came of it): a failed command."""
        with self._lock:
            now = self._now()
            self._event("command-task-failed", {
                "commandId": command_id, "producer": producer, "status": "failed",
                "sourceId": source_id, "nativeSessionId": native_session_id,
            }, now)
            self._failed_commands += 1
            self._last_command_error = {"code": code, "message": _message(message), "at": now}
            self._changed(now)

    def event(self, kind: str, message: str, **fields: Any) -> None:
        """Any other activity (started, SIGHUP, stopping...): {seq, at, kind, message, ...fields}."""
        with self._lock:
            now = self._now()
            self._event(kind, {"message": message, **fields}, now)
            self._changed(now)

    # -- the record ------------------------------------------------------------------------

    @property
    def version(self) -> int:
        with self._lock:
            return self._version

    def _assess(self) -> tuple[str, list[str]]:
        """The overall status and the reasons it is not ready (under the lock)."""
        if self._status != "running":
            overall = self._status
            return overall, [{"starting": "host is starting", "stopping": "host is stopping",
                              "stopped": "host stopped"}[overall]]
        reasons = []
        if not self._admitting:
            reasons.append("not admitting commands")
        for entry in self._sources.values():
            if entry["lifecycle"] == "failed":
                error = entry["errors"][-1]["code"] if entry["errors"] else "failed"
                reasons.append(f"source {entry['id']} failed ({error})")
        if self._pending_receipts:
            reasons.append(f"{self._pending_receipts} receipt publication(s) pending")
        if self._collection["lastError"] is not None:
            reasons.append(f"last collection failed ({self._collection['lastError']['code']})")
        return ("degraded" if reasons else "ready"), reasons

    def record(self) -> dict[str, Any]:
        """The value for `FabricTarget.publish_health` (a detached copy)."""
        with self._lock:
            overall, reasons = self._assess()
            return copy.deepcopy({
                "status": overall,
                "since": self._since,
                "reasons": reasons,
                "host": {**self._host, "updatedAt": self._updated_at},
                "cells": self._cells,
                "commands": {
                    "admitting": self._admitting,
                    "pendingReceiptPublications": self._pending_receipts,
                    "failedCommands": self._failed_commands,
                    "lastError": self._last_command_error,
                },
                "collection": self._collection,
                "sources": list(self._sources.values()),
                "activity": list(self._activity),
            })


# -- reading: `agentctl health` ---------------------------------------------------------------


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
    moment = now or (clock() if clock else _utc_now())
    updated = _parse_iso((record.get("host") or {}).get("updatedAt"))
    age = None if updated is None else round(max(0.0, (moment - updated).total_seconds()), 3)
    return HealthView(record, age, held, holder)

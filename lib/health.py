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
from datetime import UTC, datetime
from typing import Any

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


def utc_now() -> datetime:
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
        self._clock = clock or utc_now
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

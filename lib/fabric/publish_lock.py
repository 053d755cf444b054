"""The publish lock: one publication at a time per (store, space) across processes.

A short-held `filelock` lock under the user's runtime directory is the serial publish
queue between processes (`agentctl publish` from cron and a running `agentctl serve`):
a second publisher waits its turn. The holder writes who it is (pid, host, command)
into a sidecar file, so a publisher that gives up can say which process holds the lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import filelock

from lib.errors import CodedError, ExitCode

DEFAULT_TIMEOUT_SECONDS = 600.0


class PublishLockHeld(CodedError):
    """Another process held the publish lock for the whole timeout (exit 4)."""

    exit_code = ExitCode.LOCKED

    def __init__(self, path: Path, holder: Mapping[str, Any] | None, timeout: float) -> None:
        self.path = path
        self.holder = dict(holder) if holder else None
        self.timeout = timeout
        super().__init__(
            "publish-lock-held",
            f"another publication holds the publish lock ({describe_holder(holder)}); "
            f"gave up after {timeout:g} s waiting for {path}",
        )


def describe_holder(holder: Mapping[str, Any] | None) -> str:
    if not holder:
        return "holder unknown"
    command = holder.get("command") or "?"
    return f"pid {holder.get('pid', '?')} on {holder.get('hostname', '?')}: {command}"


def runtime_directory(environ: Mapping[str, str] | None = None) -> Path:
    """`$AGENTCTL_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/agentctl`, else a per-user temp dir."""
    env = os.environ if environ is None else environ
    if env.get("AGENTCTL_RUNTIME_DIR"):
        return Path(env["AGENTCTL_RUNTIME_DIR"]).expanduser()
    if env.get("XDG_RUNTIME_DIR"):
        return Path(env["XDG_RUNTIME_DIR"]) / "agentctl"
    return Path(tempfile.gettempdir()) / f"agentctl-{os.getuid()}"


def lock_path(directory: Path, store_url: str, space: str) -> Path:
    digest = hashlib.sha256(f"{store_url}\n{space}".encode()).hexdigest()[:24]
    return directory / f"publish-{digest}.lock"


class PublishLock:
    """Reentrant within one object; exclusive between objects, threads and processes.

    `on_wait(holder)` is called once when the lock is busy at the first attempt, before
    waiting (a CLI prints "waiting for ..."; tests use it to see that a second holder
    waits).
    """

    def __init__(
        self,
        store_url: str,
        space: str,
        *,
        directory: Path | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        on_wait: Callable[[dict[str, Any] | None], None] | None = None,
    ) -> None:
        self.directory = Path(directory) if directory is not None else runtime_directory()
        self.path = lock_path(self.directory, store_url, space)
        self.holder_path = self.path.with_suffix(".holder")
        self.timeout = timeout
        self.on_wait = on_wait
        # filelock counts re-entries per object, not per thread: this RLock keeps two
        # threads sharing one PublishLock exclusive, as two objects are
        self._lock = filelock.FileLock(str(self.path), thread_local=False)
        self._owner = threading.RLock()
        self._depth = 0

    def acquire(self, timeout: float | None = None) -> None:
        """Wait up to `timeout` seconds (default: the lock's; negative: forever)."""
        limit = self.timeout if timeout is None else timeout
        waited = False
        if not self._owner.acquire(blocking=False):
            waited = True
            if self.on_wait is not None:
                self.on_wait(self.read_holder())
            if not self._owner.acquire(timeout=limit if limit >= 0 else -1):
                raise PublishLockHeld(self.path, self.read_holder(), limit)
        if self._depth:
            self._depth += 1
            return
        try:
            self._acquire_file(limit, waited)
        except BaseException:
            self._owner.release()
            raise
        self._depth = 1
        self._write_holder()

    def _acquire_file(self, limit: float, waited: bool) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            self._lock.acquire(timeout=0)
            return
        except filelock.Timeout:
            pass
        if not waited and self.on_wait is not None:
            self.on_wait(self.read_holder())
        try:
            self._lock.acquire(timeout=limit)
        except filelock.Timeout:
            raise PublishLockHeld(self.path, self.read_holder(), limit) from None

    def release(self) -> None:
        """Release one acquisition, from the thread that made it."""
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth == 0:
            try:
                self.holder_path.unlink(missing_ok=True)
            finally:
                self._lock.release()
        self._owner.release()

    @property
    def held(self) -> bool:
        return self._depth > 0

    def read_holder(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.holder_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _write_holder(self) -> None:
        holder = {
            "pid": os.getpid(),
            "hostname": socket.gethostname(),
            "command": " ".join(sys.argv) if sys.argv and sys.argv[0] else sys.executable,
            "acquiredAt": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        # write then rename, so a waiting process never reads half a record
        temporary = self.holder_path.with_suffix(f".holder.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(holder), encoding="utf-8")
        os.replace(temporary, self.holder_path)

    def __enter__(self) -> PublishLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

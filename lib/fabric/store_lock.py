"""Named cross-process locks that a store provides for a space (`Store.lock`).

A `StoreLock` is what serialises work that must not overlap between processes sharing
a store: the short-held publish lock (the serial publish queue) and, later, the
long-held executor lock. It is reentrant within one object and exclusive between
objects, threads and processes. The holder leaves a note (pid, host, command, when)
that a waiter can read, so a process that gives up can name who holds the lock.

Where a lock lives belongs to the store, because the store knows what makes two
handles the same: the SQLite store keeps `flock(2)`ed files beside its database file,
keyed by the file's resolved path (lock_files.py); an in-memory store, which no other
process can open, keeps them in the process (`LocalLockTable`); a PostgreSQL store
would use advisory locks keyed by the space. This module holds what every kind
shares: reentrancy, waiting, the holder note and the error naming the holder.
"""

from __future__ import annotations

import abc
import os
import re
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from lib.errors import CodedError, ExitCode

DEFAULT_TIMEOUT_SECONDS = 600.0
PUBLISH_LOCK = "publish"
RECEIPTS_LOCK = "receipts"

OnWait = Callable[[dict[str, Any] | None], None]

_NAME = re.compile(r"[a-z][a-z0-9-]{0,39}")


def check_lock_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"a lock name is lowercase letters, digits and dashes: {name!r}")
    return name


class LockHeld(CodedError):
    """Another holder kept a store lock for the whole timeout. `holder` is its note
    (None when unknown), `where` names the lock for people (a path, a key)."""

    exit_code = ExitCode.LOCKED

    def __init__(
        self, name: str, where: str, holder: Mapping[str, Any] | None, timeout: float
    ) -> None:
        self.name = name
        self.where = where
        self.holder = dict(holder) if holder else None
        self.timeout = timeout
        super().__init__(f"{name}-lock-held", self._describe())

    def _describe(self) -> str:
        return (
            f"another process holds the {self.name} lock ({describe_holder(self.holder)}); "
            f"gave up after {self.timeout:g} s waiting for {self.where}"
        )


class PublishLockHeld(LockHeld):
    """Another publication held the publish lock for the whole timeout (CLI exit 4)."""

    def _describe(self) -> str:
        return (
            f"another publication holds the publish lock ({describe_holder(self.holder)}); "
            f"gave up after {self.timeout:g} s waiting for {self.where}"
        )


_HELD_ERRORS: dict[str, type[LockHeld]] = {PUBLISH_LOCK: PublishLockHeld}


def lock_held(
    name: str, where: str, holder: Mapping[str, Any] | None, timeout: float
) -> LockHeld:
    return _HELD_ERRORS.get(name, LockHeld)(name, where, holder, timeout)


def describe_holder(holder: Mapping[str, Any] | None) -> str:
    if not holder:
        return "holder unknown"
    command = holder.get("command") or "?"
    return f"pid {holder.get('pid', '?')} on {holder.get('hostname', '?')}: {command}"


def holder_note() -> dict[str, Any]:
    """Who this process is, for the note a lock holder leaves."""
    return {
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "command": " ".join(sys.argv) if sys.argv and sys.argv[0] else sys.executable,
        "acquiredAt": datetime.now(UTC).isoformat(timespec="seconds"),
    }


class StoreLock(abc.ABC):
    """Reentrant within one object; exclusive between objects, threads and processes.

    `acquire(timeout)` waits up to `timeout` seconds (default: the lock's; negative:
    forever), then raises `LockHeld` (`PublishLockHeld` for the publish lock) naming
    the holder. `on_wait(holder)` is called once when the lock is busy at the first
    attempt, before waiting (a CLI prints "waiting for ..."; tests see a waiter).
    Release from the thread that acquired.

    Backends implement `_take`, `_give`, `_write_holder`, `_clear_holder` and
    `read_holder`.
    """

    def __init__(
        self,
        space: str,
        name: str,
        *,
        where: str,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        on_wait: OnWait | None = None,
    ) -> None:
        self.space = space
        self.name = check_lock_name(name)
        self.where = where
        self.timeout = timeout
        self.on_wait = on_wait
        # the backend's primitive may count re-entries per object, not per thread: this
        # RLock keeps two threads sharing one StoreLock exclusive, as two objects are
        self._owner = threading.RLock()
        self._depth = 0

    def acquire(self, timeout: float | None = None) -> None:
        limit = self.timeout if timeout is None else timeout
        waited = False
        if not self._owner.acquire(blocking=False):
            waited = True
            self._notify_wait()
            if not self._owner.acquire(timeout=limit if limit >= 0 else -1):
                raise lock_held(self.name, self.where, self.read_holder(), limit)
        if self._depth:
            self._depth += 1
            return
        try:
            if not self._take(0):
                if not waited:
                    self._notify_wait()
                if not self._take(limit):
                    raise lock_held(self.name, self.where, self.read_holder(), limit)
        except BaseException:
            self._owner.release()
            raise
        self._depth = 1
        try:
            self._write_holder(holder_note())
        except BaseException:
            self._depth = 0
            self._give()
            self._owner.release()
            raise

    def release(self) -> None:
        """Release one acquisition, from the thread that made it."""
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth == 0:
            try:
                self._clear_holder()
            finally:
                self._give()
        self._owner.release()

    @property
    def held(self) -> bool:
        return self._depth > 0

    def take_unowned(self, timeout: float) -> bool:
        """The backend's lock alone, waiting up to `timeout` seconds (negative: forever):
        no re-entry count, holder note or owning thread, so another thread may give it
        back (`give_unowned`). For a lock a process holds across its threads for a while
        (the SQLite key index, sqlite_key_index.py); never mixed with `acquire`."""
        return self._take(timeout)

    def give_unowned(self) -> None:
        """Give back what `take_unowned` took, from any thread."""
        self._give()

    def _notify_wait(self) -> None:
        if self.on_wait is not None:
            self.on_wait(self.read_holder())

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.space!r}, {self.where!r})"

    @abc.abstractmethod
    def _take(self, timeout: float) -> bool:
        """Take the cross-holder lock within timeout (0: one try; negative: forever)."""

    @abc.abstractmethod
    def _give(self) -> None:
        """Give back what `_take` took."""

    @abc.abstractmethod
    def _write_holder(self, note: dict[str, Any]) -> None:
        """Leave the note for waiters (called while holding)."""

    @abc.abstractmethod
    def _clear_holder(self) -> None:
        """Remove the note (called while still holding)."""

    @abc.abstractmethod
    def read_holder(self) -> dict[str, Any] | None:
        """The current holder's note, None when unknown or not held."""


class _LocalSlot:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holder: dict[str, Any] | None = None


class LocalLockTable:
    """Locks for a store no other process can open (`sqlite:///:memory:`): exclusive
    between the objects and threads of this process, keyed by (space, name)."""

    def __init__(self) -> None:
        self._slots: dict[tuple[str, str], _LocalSlot] = {}
        self._guard = threading.Lock()

    def lock(
        self,
        space: str,
        name: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        on_wait: OnWait | None = None,
        where: str = ":memory:",
    ) -> StoreLock:
        with self._guard:
            slot = self._slots.setdefault((space, check_lock_name(name)), _LocalSlot())
        return _LocalLock(slot, space, name, where=f"{where} ({name}, {space})",
                          timeout=timeout, on_wait=on_wait)


class _LocalLock(StoreLock):
    def __init__(self, slot: _LocalSlot, space: str, name: str, **options: Any) -> None:
        super().__init__(space, name, **options)
        self._slot = slot

    def _take(self, timeout: float) -> bool:
        if timeout == 0:
            return self._slot.lock.acquire(blocking=False)
        return self._slot.lock.acquire(timeout=timeout if timeout > 0 else -1)

    def _give(self) -> None:
        self._slot.lock.release()

    def _write_holder(self, note: dict[str, Any]) -> None:
        self._slot.holder = dict(note)

    def _clear_holder(self) -> None:
        self._slot.holder = None

    def read_holder(self) -> dict[str, Any] | None:
        holder = self._slot.holder
        return dict(holder) if holder is not None else None

"""Where the ACP driver keeps each session's learned controls between runs.

A later run that reads no session of a source (every one retained, nothing changed) must
still publish the modes and options of the sessions the agent lists, and no agent
answers for them without a load. So what `acp_controls` learns is also kept in the
workspace's private state directory, one small file per session:

    <state dir>/acp-controls/<source digest>/<session digest>.json     (0600, dirs 0700)

(a digest is the first 40 hex digits of the SHA-256 of the normalized source id, or of
the agent's session id). A file holds the session's wire form (`Controls.to_wire`); it
is written, whole (a new file renamed over the old), when a response changes what is
known of the session, and removed when a complete inventory forgets the session.

Every path below the state directory is opened relative to its parent's descriptor
with O_NOFOLLOW, so no link is ever followed. A planted directory (a link, not a
directory, another user's) refuses the driver's start with `unsafe-state-directory`
(exit 2); ours with a loose mode is tightened to 0700. A file that is a link, not a
regular file, too large or not ours in form counts as absent. A directory that cannot
be created (a full disk) leaves the controls in memory only, as before this book.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any

from lib.drivers.base import DriverError
from lib.errors import ExitCode

DIRECTORY = "acp-controls"
FORMAT = 1
MAX_FILE_BYTES = 4 << 20  # no session's controls come near this: a bigger file is not ours
_NAME = re.compile(r"[0-9a-f]{40}\.json")
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeControlsDirectory(DriverError):
    """A directory of the book that agentctl will not use as found (a usage error)."""

    exit_code = ExitCode.USAGE


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:40]


class ControlsBook:
    """The kept controls of one source: a directory descriptor, and files by session.
    Thread-safe; after `close()` every call does nothing."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path
        self._lock = threading.Lock()

    @classmethod
    def open(cls, state_dir: Path, source_id: str) -> ControlsBook | None:
        """The book of `source_id` under `state_dir` (created when absent); None when it
        cannot be created; UnsafeControlsDirectory when a directory on the way is planted."""
        path = state_dir / DIRECTORY / digest(source_id)
        try:
            top = os.open(state_dir, _DIRECTORY_FLAGS)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _unsafe(state_dir, "is not a directory of your own") from None
            return None
        fd, where = top, state_dir
        try:
            for name in (DIRECTORY, digest(source_id)):
                where = where / name
                child = _private_directory(fd, name, where)
                os.close(fd)
                fd = child
        except OSError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path)

    def load_all(self) -> dict[str, dict[str, Any]]:
        """Every kept session's wire form by session id (unreadable files left out)."""
        with self._lock:
            if self._fd is None:
                return {}
            try:
                names = sorted(name for name in os.listdir(self._fd) if _NAME.fullmatch(name))
            except OSError:
                return {}
            found = ((name, self._read(name)) for name in names)
            return {value["sessionId"]: value for name, value in found
                    if value is not None and name == f"{digest(value['sessionId'])}.json"}

    def load(self, session_id: str) -> dict[str, Any] | None:
        with self._lock:
            if self._fd is None:
                return None
            value = self._read(f"{digest(session_id)}.json")
            return value if value is not None and value["sessionId"] == session_id else None

    def save(self, session_id: str, value: dict[str, Any]) -> None:
        """Written whole or not at all (OSError when not)."""
        data = json.dumps({**value, "format": FORMAT, "sessionId": session_id}, sort_keys=True).encode()
        name = f"{digest(session_id)}.json"
        with self._lock:
            if self._fd is None:
                return
            temporary = f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600, dir_fd=self._fd)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(temporary, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
            except BaseException:
                try:
                    os.unlink(temporary, dir_fd=self._fd)
                except OSError:
                    pass
                raise

    def forget(self, session_id: str) -> None:
        with self._lock:
            if self._fd is None:
                return
            try:
                os.unlink(f"{digest(session_id)}.json", dir_fd=self._fd)
            except FileNotFoundError:
                pass

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _read(self, name: str) -> dict[str, Any] | None:
        """One kept file (the lock held), or None: a link, not a regular file, too large,
        not JSON, or not in the book's form."""
        assert self._fd is not None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self._fd)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_size > MAX_FILE_BYTES:
                return None
            with os.fdopen(os.dup(fd), "rb") as handle:
                value = json.loads(handle.read(MAX_FILE_BYTES + 1))
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)
        if (not isinstance(value, dict) or value.get("format") != FORMAT
                or not isinstance(value.get("sessionId"), str)):
            return None
        return value


def _private_directory(parent: int, name: str, path: Path) -> int:
    """The directory `name` (at `path`) under the descriptor `parent`, created 0700 when
    absent, opened without following a link; a loose mode of ours is tightened."""
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
    except FileExistsError:
        pass
    try:
        fd = os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _unsafe(path, "is a symbolic link or not a directory") from None
        raise
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid():
            raise _unsafe(path, f"belongs to uid {info.st_uid}, not to you (uid {os.geteuid()})")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _unsafe(path: Path, problem: str) -> UnsafeControlsDirectory:
    return UnsafeControlsDirectory(
        "unsafe-state-directory",
        f"{path} {problem}; agentctl keeps the ACP controls it learned only in a real directory of "
        f"your own: remove it, or choose another state directory with --state-dir")

"""Store locks as lock files in a private directory beside a database file.

    <database file, resolved>.locks/              mode 0700, owned by the user
        <name>-<24 hex>.lock                      the lock file (0600), flock(2)ed
        <name>-<24 hex>.holder                    the holder's note, JSON (0600)

The hex is the start of sha256(resolved database path, space, name), so every
spelling of one database file (`sqlite:////x`, a symlinked directory, a relative
path) takes the same lock, and two spaces of one file do not. The directory sits
beside the state it protects: nothing of it lives in a shared temporary directory.

Nothing is written through a planted path: a lock directory that is a symlink, is
not a directory, belongs to another user, or is writable by group or others is
refused with `unsafe-lock-directory` (nothing in it is touched); files are opened
with O_NOFOLLOW, and the holder note is written to a new file (O_CREAT | O_EXCL |
O_NOFOLLOW, mode 0600) that is then renamed over the note, which replaces a planted
symlink instead of following it.

The lock is an exclusive `flock(2)` on the lock file, taken without blocking and tried
again until the timeout (every millisecond at first, then less often, up to 50 ms),
the very lock the `filelock` package takes on Unix (earlier versions used it: both
exclude each other). Taken directly, a take and a give cost about 15 µs instead of
filelock's 130 (which keeps books on descriptors across forks). What of that matters
here is kept: a forked child that gives back a lock its parent took only closes its
copy of the descriptor, since unlocking it would release the parent's lock too (one
open file description).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import secrets
import stat
import time
from pathlib import Path
from typing import Any

from lib.errors import ExitCode
from lib.fabric.private_paths import ownership_problem
from lib.fabric.store_errors import StoreError
from lib.fabric.store_lock import StoreLock

_NOTE_LIMIT = 64 * 1024
_BUSY = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES})  # held elsewhere
FIRST_POLL_SECONDS = 0.001
LAST_POLL_SECONDS = 0.05


class UnsafeLockDirectory(StoreError):
    """A lock directory (or a file in it) that someone else could have planted: the user
    must look at it, like any state path agentctl refuses (exit 2)."""

    exit_code = ExitCode.USAGE


def lock_directory_for(database: str | os.PathLike[str]) -> Path:
    """The private lock directory beside a database file (its resolved path)."""
    return Path(os.path.realpath(database) + ".locks")


def lock_stem(database: str | os.PathLike[str], space: str, name: str) -> str:
    digest = hashlib.sha256(f"{os.path.realpath(database)}\n{space}\n{name}".encode())
    return f"{name}-{digest.hexdigest()[:24]}"


def _unsafe(path: Path, problem: str) -> UnsafeLockDirectory:
    return UnsafeLockDirectory("unsafe-lock-directory",
        f"lock directory {path} {problem}, so agentctl does not use it; remove it "
        f"(agentctl creates it again, private to you) after checking who made it"
    )


def ensure_private_directory(path: Path) -> None:
    """Create `path` mode 0700, or accept it only when it is a real directory that
    belongs to this user and that group and others cannot write."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise StoreError(
            "store-unavailable",
            f"cannot create lock directory {path}: {exc.strerror}",
        ) from None
    info = os.lstat(path)
    problem = ownership_problem(info, directory=True)
    if problem is not None:
        raise _unsafe(path, problem)
    if info.st_mode & 0o022:
        raise _unsafe(path, f"is writable by group or others (mode {stat.S_IMODE(info.st_mode):o})")


def _open_private_file(path: Path, flags: int) -> int:
    """Open (creating if absent, mode 0600) a regular file, never through a symlink."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise _unsafe(path.parent, f"holds a symbolic link {path.name}") from None
        raise StoreError("store-unavailable", f"cannot open lock file {path}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _unsafe(path.parent, f"holds {path.name}, which is not a regular file")
    return fd


def write_note(path: Path, note: dict[str, Any]) -> None:
    """Replace the note at `path` whole: a reader never sees half a note, and a
    planted symlink at `path` is replaced, not followed."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    data = json.dumps(note).encode("utf-8")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        try:
            written = os.write(fd, data)
        finally:
            os.close(fd)
        if written != len(data):
            raise OSError(errno.EIO, f"wrote {written} of {len(data)} bytes of the lock note")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def read_note(path: Path) -> dict[str, Any] | None:
    """The note at `path`, None when absent, unreadable, not a regular file or a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = json.loads(os.read(fd, _NOTE_LIMIT).decode("utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else None


class FileStoreLock(StoreLock):
    """A StoreLock held as an exclusive flock(2) of a file beside the database file."""

    def __init__(self, database: str, space: str, name: str, **options: Any) -> None:
        self.directory = lock_directory_for(database)
        stem = lock_stem(database, space, name)
        self.path = self.directory / f"{stem}.lock"
        self.holder_path = self.directory / f"{stem}.holder"
        super().__init__(space, name, where=str(self.path), **options)
        self._fd: int | None = None  # the locked file's descriptor while held
        self._fd_pid = 0  # the process that locked it

    def _take(self, timeout: float) -> bool:
        ensure_private_directory(self.directory)
        deadline = None if timeout < 0 else time.monotonic() + timeout
        pause = FIRST_POLL_SECONDS
        while True:
            fd = _open_private_file(self.path, os.O_RDWR)
            if _flocked(fd, self.path):
                if _linked(fd, self.path):
                    self._fd, self._fd_pid = fd, os.getpid()
                    return True
                # the file was removed between our open and our lock: lock the one there now
                os.close(fd)
                continue
            os.close(fd)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            time.sleep(pause if left is None else min(pause, left))
            pause = min(pause * 2, LAST_POLL_SECONDS)

    def _give(self) -> None:
        fd, self._fd = self._fd, None
        assert fd is not None  # given back only after taken
        try:
            if self._fd_pid == os.getpid():  # not in a forked child: see the module's note
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)  # the last descriptor of the lock closed releases it too

    def _write_holder(self, note: dict[str, Any]) -> None:
        write_note(self.holder_path, note)

    def _clear_holder(self) -> None:
        self.holder_path.unlink(missing_ok=True)

    def read_holder(self) -> dict[str, Any] | None:
        return read_note(self.holder_path)


def _linked(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_nlink > 0
    except OSError as exc:
        os.close(fd)
        raise StoreError("store-unavailable", f"cannot lock {path}: {exc.strerror}") from None


def _flocked(fd: int, path: Path) -> bool:
    """One try at an exclusive flock of `fd`: False when another holder has it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in _BUSY:
            return False
        os.close(fd)
        raise StoreError("store-unavailable", f"cannot lock {path}: {exc.strerror}") from None
    return True

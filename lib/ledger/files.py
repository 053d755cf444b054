"""The ledger's files: private checks, reading a slot, the durable write, the file lock.

The ledger is stricter than `private_paths.check_private`: a directory or slot that
group or others may access is refused, not tightened (interfaces §Local command
ledger), like the identity file. The symlink, kind and owner checks are
`private_paths.ownership_problem`, the project's one rule for them.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat
from pathlib import Path

from lib.errors import CodedError, ExitCode
from lib.fabric.private_paths import UnsafeStatePath, ownership_problem

_FIX = "move it away or fix its owner and mode (directory 0700, files 0600), then retry"


class LedgerError(CodedError):
    """The ledger cannot be read, written or locked; `code` says which."""


def check_private(path: Path, *, directory: bool) -> bool:
    """True when `path` is the user's own private directory or file, False when missing;
    UnsafeStatePath (code `unsafe-ledger-path`) when it must not be used."""
    what = "command ledger directory" if directory else "command ledger file"
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    problem = ownership_problem(info, directory=directory)
    if problem is None and stat.S_IMODE(info.st_mode) & 0o077:
        problem = f"is open to group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    if problem is not None:
        raise UnsafeStatePath("unsafe-ledger-path", f"{what} {path} {problem}; {_FIX}")
    return True


def ensure_directory(path: Path) -> None:
    """Create the ledger directory 0700 (missing parents as the umask says), or check it."""
    try:
        os.makedirs(path.parent, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise LedgerError("ledger-write-failed", f"cannot create ledger directory {path}: {exc.strerror}") from None
    check_private(path, directory=True)


def read_slot(path: Path) -> bytes | None:
    """The bytes of a ledger slot, None when it does not exist."""
    if not check_private(path, directory=False):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LedgerError("ledger-read-failed", f"cannot read command ledger {path}: {exc.strerror}") from None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_durably(path: Path, data: bytes) -> None:
    """Replace `path` with `data`: a 0600 temporary file in the same directory, fsync,
    rename over, fsync the directory. LedgerError on failure; no temporary file is left."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise LedgerError("ledger-write-failed", f"cannot write command ledger {path}: {exc.strerror or exc}") from None
    try:
        dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError as exc:
        raise LedgerError("ledger-write-failed", f"cannot sync ledger directory {path.parent}: {exc.strerror}") from None


def remove_stale_temporaries(path: Path) -> None:
    """Delete temporary files an interrupted writer left beside `path` (call under the lock)."""
    prefix = f".{path.name}.tmp-"
    for entry in os.scandir(path.parent):
        if entry.name.startswith(prefix) and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                pass


def lock(path: Path) -> int:
    """Take the ledger's own file lock (`<path>.lock`, 0600), held until the fd is closed;
    LedgerError (exit 4) when another process holds it."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            check_private(lock_path, directory=False)
        raise LedgerError("ledger-write-failed", f"cannot open ledger lock {lock_path}: {exc.strerror}") from None
    try:
        check_private(lock_path, directory=False)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LedgerError(
            "ledger-locked", f"command ledger {path} is in use by another process", exit_code=ExitCode.LOCKED
        ) from None
    except BaseException:
        os.close(fd)
        raise
    return fd

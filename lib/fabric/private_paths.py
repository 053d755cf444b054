"""Private state: the directories and files agentctl keeps for you, and how they are checked.

Each is created private (directories 0700, files 0600) and checked whenever it is
opened, in the same way everywhere:

- a symbolic link, the wrong kind (a file where a directory belongs, a FIFO where the
  store belongs) or another user's: refused (`UnsafeStatePath`, exit 2) with one line
  naming the path and what to do; nothing is changed;
- yours, with permission bits for group or others: tightened (the owner's bits are
  kept, 0755 becomes 0700 and 0644 becomes 0600), and `notice` hears one line saying so.

Three paths are stricter, for reasons of their own: the identity file is refused when
group or others may read it (identity.py; a key others could read may already be
exposed, so tightening it would hide that), the SQLite lock directory is refused
when group or others may write it (lock_files.py; agentctl makes it 0700 itself, so a
writable one was changed by someone else), and the command ledger's directory and
files are refused when group or others have any access (lib/ledger/files.py; the spec
says reject). All use `ownership_problem`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from lib.errors import UsageError

Notice = Callable[[str], None]


class UnsafeStatePath(UsageError):
    """A state directory or file agentctl will not use as found; the message says why and what to do."""


def ownership_problem(info: os.stat_result, *, directory: bool) -> str | None:
    """What makes a path unusable whatever its mode (from its lstat): a symbolic link,
    the wrong kind, or another owner. None when it is the user's own of the right kind."""
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if directory and not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if not directory and not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if info.st_uid != os.geteuid():
        return f"belongs to uid {info.st_uid}, not to you (uid {os.geteuid()})"
    return None


def ensure_private_directory(path: Path, *, what: str, fix: str, code: str, notice: Notice | None) -> None:
    """Create `path` mode 0700 (its missing parents as the umask says), or check the one
    there: refuse a symlink, a non-directory or another user's; tighten a loose mode.
    OSError when it cannot be created."""
    try:
        os.makedirs(path.parent, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    check_private(path, what=what, fix=fix, code=code, notice=notice, directory=True)


def check_private(path: Path, *, what: str, fix: str, code: str, notice: Notice | None, directory: bool) -> None:
    """Check an existing path (FileNotFoundError when there is none) and tighten its mode
    when it is the user's own and loose; UnsafeStatePath when it must not be used."""
    info = os.lstat(path)
    problem = ownership_problem(info, directory=directory)
    if problem is not None:
        if stat.S_ISLNK(info.st_mode):
            problem += f" (to {os.path.realpath(path)})"
        raise UnsafeStatePath(code, f"{what} {path} {problem}; {fix}")
    mode = stat.S_IMODE(info.st_mode)
    if not mode & 0o077:
        return
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | (os.O_DIRECTORY if directory else 0))
    except OSError as exc:
        why = "changed while agentctl checked it" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else exc.strerror
        raise UnsafeStatePath(code, f"{what} {path} cannot be made private ({why}); {fix}") from None
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            raise UnsafeStatePath(code, f"{what} {path} changed while agentctl checked it; {fix}")
        tightened = stat.S_IMODE(now.st_mode) & 0o700
        os.fchmod(fd, tightened)
    finally:
        os.close(fd)
    if notice is not None:
        notice(f"agentctl: {what} {path} was mode {mode:04o}, open to other users; "
               f"made it {tightened:04o} (private to you)")


def create_private_file(path: Path, *, what: str, fix: str, code: str, notice: Notice | None) -> None:
    """Create the file `path` mode 0600 (its missing directories 0700), or check the one
    there like `check_private`. OSError when it cannot be created."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    except FileExistsError:
        check_private(path, what=what, fix=fix, code=code, notice=notice, directory=False)
        return
    os.close(fd)

"""Checkout discovery: the Git checkouts below the configured `checkoutRoots`.

    directories = discover_checkouts([Path("/home/me/src")])   # sorted absolute paths

A publication given the list publishes one `discovery` checkout row per directory
(lib/fabric/checkouts.py), including checkouts no session names; the list is the
complete discovery portion of the index, so a scan must either complete or fail
(spec "Session indexes": a failed discovery prevents index publication, so a partial
scan cannot delete checkout rows).

The walk:

- Each root is depth 0; directories down to `max_depth` levels below it are examined.
  A root may itself be a symlink (it was configured); below it no symlink is followed,
  so the scan never leaves the root nor loops.
- Hidden directories (`.name`) and heavy ones that never hold checkouts of their own
  (`node_modules`, `__pycache__`, ...) are not entered.
- A directory is a checkout when its `.git` is valid: a real directory holding a
  `HEAD` naming a ref or a commit and an `objects/` directory (or a `commondir` file);
  or a regular file `gitdir: <path>` whose target (relative to the checkout) is a
  directory holding such a `HEAD` (linked worktrees and submodules). Stale or invalid
  markers (a `gitdir:` pointing nowhere, a `.git` directory without `HEAD`, a symlink)
  make the directory an ordinary one: it is omitted, and the walk goes on below it.
- The walk stops at a checkout: its own subdirectories are not scanned, so a working
  tree's build output is never walked. A checkout nested inside another (a submodule,
  a worktree placed inside the main checkout) is therefore not discovered by the scan;
  a session working in it still publishes its row.
- An entry that vanishes during the walk is skipped. Any other failure to read a
  directory or a marker, and a root that does not exist or cannot be read, raises
  `CheckoutDiscoveryError`: the scan is incomplete and must not be published.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable

from lib.errors import CodedError

DEFAULT_MAX_DEPTH = 4
SKIPPED_DIRECTORIES = frozenset({"node_modules", "__pycache__", "bower_components", "site-packages"})
MAX_MARKER_BYTES = 4096  # a `.git` file or `HEAD` longer than this is not one git wrote
HEAD_FORM = re.compile(rb"(ref: refs/\S+|[0-9a-f]{40}|[0-9a-f]{64})\s*")
VANISHED = (errno.ENOENT, errno.ENOTDIR)  # removed (or replaced by a file) while walked


class CheckoutDiscoveryError(CodedError):
    """The scan could not complete; the publication it was for must not be committed."""

    def __init__(self, message: str) -> None:
        super().__init__("checkout-discovery-failed", message)


def discover_checkouts(roots: Iterable[str | os.PathLike[str]], *, max_depth: int = DEFAULT_MAX_DEPTH) -> list[str]:
    """The checkout directories below `roots` (absolute paths, sorted, each once)."""
    found: set[str] = set()
    for root in roots:
        path = os.fspath(root)
        if not os.path.isabs(path):
            raise CheckoutDiscoveryError(f"checkout root {path!r} is not an absolute path; "
                                         "give absolute paths in checkoutRoots")
        _walk_root(os.path.normpath(path), max_depth, found)
    return sorted(found)


def _walk_root(root: str, max_depth: int, found: set[str]) -> None:
    try:
        if not stat.S_ISDIR(os.stat(root).st_mode):
            raise CheckoutDiscoveryError(f"checkout root {root} is not a directory; "
                                         "remove it from checkoutRoots in the configuration")
    except OSError as exc:
        if exc.errno in VANISHED:
            raise CheckoutDiscoveryError(f"checkout root {root} does not exist; create it or remove it "
                                         "from checkoutRoots in the configuration") from None
        raise _failure(root, exc) from None
    pending = [(root, 0)]
    while pending:
        directory, depth = pending.pop()
        entries = _entries(directory, is_root=directory == root)
        if entries is None:
            continue  # vanished while walked
        marker = entries.get(".git")
        if marker is not None and _valid_marker(directory, marker):
            found.add(directory)
            continue  # the walk stops at a checkout
        if depth >= max_depth:
            continue
        for name, entry in entries.items():
            if name.startswith(".") or name in SKIPPED_DIRECTORIES:
                continue
            try:
                is_directory = entry.is_dir(follow_symlinks=False)
            except OSError as exc:
                if exc.errno in VANISHED:
                    continue
                raise _failure(entry.path, exc) from None
            if is_directory:
                pending.append((entry.path, depth + 1))


def _entries(directory: str, *, is_root: bool) -> dict[str, os.DirEntry[str]] | None:
    try:
        with os.scandir(directory) as listing:
            return {entry.name: entry for entry in listing}
    except OSError as exc:
        if exc.errno in VANISHED and not is_root:
            return None
        if exc.errno in VANISHED:
            raise CheckoutDiscoveryError(f"checkout root {directory} vanished during the scan; create it "
                                         "or remove it from checkoutRoots in the configuration") from None
        raise _failure(directory, exc) from None


def _failure(path: str, exc: OSError) -> CheckoutDiscoveryError:
    reason = exc.strerror or str(exc)
    return CheckoutDiscoveryError(
        f"checkout discovery cannot read {path} ({reason}); make it readable, or narrow checkoutRoots "
        "in the configuration so the scan does not reach it (nothing was published)"
    )


def _valid_marker(directory: str, marker: os.DirEntry[str]) -> bool:
    try:
        if marker.is_symlink():
            return False
        if marker.is_dir(follow_symlinks=False):
            return _valid_git_directory(marker.path, own=True)
        if not marker.is_file(follow_symlinks=False):
            return False
        content = _read_small(marker.path)
        if content is None or not content.startswith(b"gitdir: "):
            return False
        try:
            target = content[len(b"gitdir: "):].strip().decode("utf-8")
        except UnicodeDecodeError:
            return False
        if not target or "\0" in target:
            return False
        return _valid_git_directory(os.path.join(directory, target), own=False)
    except OSError as exc:
        if exc.errno in VANISHED:
            return False
        raise _failure(marker.path, exc) from None


def _valid_git_directory(path: str, *, own: bool) -> bool:
    """A git directory with a HEAD naming a ref or a commit; a checkout's own `.git`
    also holds its objects (or a `commondir`, as a linked worktree's does)."""
    try:
        if not stat.S_ISDIR(os.stat(path).st_mode):
            return False
    except OSError as exc:
        if exc.errno in VANISHED:
            return False  # a `gitdir:` pointing nowhere: stale
        raise
    head = _read_small(os.path.join(path, "HEAD"))
    if head is None or not HEAD_FORM.fullmatch(head):
        return False
    if not own:
        return True
    return os.path.isdir(os.path.join(path, "objects")) or os.path.isfile(os.path.join(path, "commondir"))


def _read_small(path: str) -> bytes | None:
    """A small regular file's bytes; None when it is missing, not a regular file or too large."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno in (*VANISHED, errno.ELOOP):
            return None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_MARKER_BYTES + 1)
    finally:
        os.close(fd)
    return None if len(data) > MAX_MARKER_BYTES else data

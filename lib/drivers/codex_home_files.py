"""The files a Codex home's fingerprint covers, and their digest, on plain data.

The part of codex_fingerprint.py that needs neither the source's configuration model
nor tomllib: which `codex` program runs, and the digest of the program, the home's
files, the databases and the session trees (codex_fingerprint.py says what each covers
and why). The idle fast path (lib/pipeline/idle_inputs.py) takes the same digest from
the paths kept beside the fingerprints, without importing pydantic.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time

TYPE_CHECKING = False  # typing itself is not imported on the fast path
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

TREES = ("sessions", "archived_sessions")
HOME_FILES = ("session_index.jsonl", "config.toml")
DATABASE_PREFIXES = ("state_", "thread_history_")
DATABASE_SUFFIXES = (".sqlite", ".sqlite-wal")
# Managed requirements can override where the databases live; then we cannot tell.
REQUIREMENTS_FILE = "/etc/codex/requirements.toml"


def find_codex_program(codex_bin: str | None, environ: Mapping[str, str]) -> str | None:
    """The Codex program: codexBin, then CODEX_BIN, then `codex` on PATH; None where none
    resolves. codex_launch.resolve_codex_program searches with this and says why not."""
    for candidate in (codex_bin, environ.get("CODEX_BIN")):
        if candidate:
            return shutil.which(candidate, path=environ.get("PATH"))
    return shutil.which("codex", path=environ.get("PATH"))


class HomeDigest:
    """A digest of the files, how many there were, and the newest change among them."""

    __slots__ = ("digest", "files", "newest_change_ns", "taken_ns")

    def __init__(self, digest: str, files: int, newest_change_ns: int, taken_ns: int) -> None:
        self.digest = digest
        self.files = files
        self.newest_change_ns = newest_change_ns
        self.taken_ns = taken_ns


def home_digest(program: str, home: str, databases: str) -> HomeDigest | None:
    """The digest of everything Codex's listing reads; None when that cannot be told (a
    linked directory in a session tree, an unreadable file, managed requirements)."""
    if os.path.exists(REQUIREMENTS_FILE):
        return None
    taken_ns = time.time_ns()
    digest = hashlib.sha256()
    files = 0
    newest = 0
    try:
        for label, info in _entries(program, home, databases):
            if info is None:
                digest.update(f"{label}\0absent\n".encode("utf-8", "surrogateescape"))
                continue
            files += 1
            # Codex touches its write-ahead log's status (not its data) each time it opens
            # it, so a database counts by modification time alone; SQLite never sets that back.
            changed = info.st_mtime_ns if label.startswith("db/") else info.st_ctime_ns
            newest = max(newest, info.st_mtime_ns, changed)
            digest.update(
                f"{label}\0{info.st_size}\0{info.st_ino}\0{info.st_mtime_ns}\0{changed}\n".encode(
                    "utf-8", "surrogateescape"
                )
            )
    except (Undecidable, PermissionError):
        return None
    return HomeDigest(digest.hexdigest(), files, newest, taken_ns)


def _entries(program: str, home: str, databases: str) -> Iterator[tuple[str, os.stat_result | None]]:
    """(label, stat or None when absent) for every file the fingerprint covers, in a
    stable order."""
    yield "program", _stat(program)
    for name in HOME_FILES:
        yield f"home/{name}", _stat(os.path.join(home, name))
    try:
        names = sorted(
            entry.name for entry in os.scandir(databases)
            if entry.name.startswith(DATABASE_PREFIXES) and entry.name.endswith(DATABASE_SUFFIXES)
        )
    except FileNotFoundError:
        names = []
    for name in names:
        info = _stat(os.path.join(databases, name))
        # An empty log holds nothing: Codex may remove it on exit or create it empty on
        # start, and either way the data is the same, so it counts as no file at all.
        if info is None or info.st_size > 0:
            yield f"db/{name}", info
    for tree in TREES:
        yield from _walk(os.path.join(home, tree), tree)


class Undecidable(Exception):
    """What Codex would read cannot be fingerprinted (a linked directory)."""


def _walk(directory: str, label: str) -> Iterator[tuple[str, os.stat_result | None]]:
    """Every file below `directory`, depth first by name; a linked file counts by its
    target. A linked directory (which may loop, or change where we do not look) makes
    the home undecidable; a missing tree counts as absent."""
    try:
        with os.scandir(directory) as scan:
            # a name and its kind (from the directory itself, no stat) an entry: a
            # DirEntry keeps the stat it was asked for, and a day's 1,300 rollouts held
            # theirs until the directory was done (2.5 MB, issue 14 goal 4)
            entries = sorted((entry.name, entry.is_dir(follow_symlinks=False), entry.is_symlink()) for entry in scan)
    except FileNotFoundError:
        yield f"{label}/", None
        return
    except NotADirectoryError:
        yield f"{label}/", _stat(directory)
        return
    for entry_name, is_dir, is_link in entries:
        name, path = f"{label}/{entry_name}", os.path.join(directory, entry_name)
        if is_dir:
            yield from _walk(path, name)
        elif is_link and os.path.isdir(path):
            raise Undecidable(name)
        else:
            try:
                yield name, os.stat(path)
            except FileNotFoundError:
                yield name, None  # removed while walking: differs from before and after


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None

"""The fingerprint of a Codex home: what `thread/list` depends on, without starting Codex.

Codex lists threads from its rollout files (`sessions/YYYY/MM/DD/rollout-*.jsonl`, and
`archived_sessions/` once archived), their names from `session_index.jsonl`, and its
metadata cache, titles and archive flags included, from the state database
(`state_*.sqlite` and its write-ahead log); paginated threads' turns live in
`thread_history_*.sqlite`. The fingerprint covers every file under `sessions/` and
`archived_sessions/`, those databases with their `-wal` files, `session_index.jsonl`,
`config.toml`, and the codex program itself (an upgrade may list differently). Each
file counts with its path, size, inode, and modification and status-change times in
nanoseconds (a status change also catches a write whose modification time was set
back; the databases count by modification time only, see below): a rename or archive moves or rewrites a file, a deletion removes one, an
appended turn grows one, and a title or flag set in the database grows its log.
(The `-shm` index changes whenever Codex merely opens the database, so it is left out,
and an empty `-wal` counts as no `-wal`: Codex removes or recreates it empty at will.)

No fingerprint (None, so the source is listed every time) when what Codex reads cannot
be told from here: an explicit `command`, `proxy` mode (someone else's daemon), a
managed `requirements.toml` that may move the databases, an unreadable `config.toml`,
or a linked directory inside the session trees.
"""

from __future__ import annotations

import hashlib
import os
import time
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path

from lib.drivers.base import DriverUnavailable, InventoryFingerprint
from lib.drivers.codex_launch import child_environment, resolve_codex_program
from lib.types import AgentSourceConfig

TREES = ("sessions", "archived_sessions")
HOME_FILES = ("session_index.jsonl", "config.toml")
DATABASE_PREFIXES = ("state_", "thread_history_")
DATABASE_SUFFIXES = (".sqlite", ".sqlite-wal")
# Managed requirements can override where the databases live; then we cannot tell.
REQUIREMENTS_FILE = Path("/etc/codex/requirements.toml")


def inventory_fingerprint(config: AgentSourceConfig) -> InventoryFingerprint | None:
    """`CodexAppServerDriver.inventory_fingerprint` (lib/drivers/registry.py calls it
    without importing the driver's transport)."""
    return codex_inventory_fingerprint(config)


def codex_inventory_fingerprint(
    config: AgentSourceConfig, environ: Mapping[str, str] | None = None
) -> InventoryFingerprint | None:
    environ = os.environ if environ is None else environ
    if config.command or config.codex_transport == "proxy" or REQUIREMENTS_FILE.exists():
        return None
    try:
        program = resolve_codex_program(config, environ)
    except DriverUnavailable:
        return None  # the listing reports that; nothing to compare
    env = child_environment(config, environ)
    base = Path(config.cwd) if config.cwd else Path.cwd()
    home = base / os.path.expanduser(env.get("CODEX_HOME") or "~/.codex")
    databases = database_directory(home, env, base)
    if databases is None:
        return None
    taken_ns = time.time_ns()
    digest = hashlib.sha256()
    files = 0
    newest = 0
    try:
        for label, info in _entries(Path(program), home, databases):
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
    return InventoryFingerprint(digest=digest.hexdigest(), files=files, newest_change_ns=newest, taken_ns=taken_ns)


def database_directory(home: Path, env: Mapping[str, str], base: Path) -> Path | None:
    """Where Codex keeps its SQLite files: `sqlite_home` in config.toml, else
    `$CODEX_SQLITE_HOME`, else the home. None when config.toml cannot be read (Codex
    would not start either; the listing says why)."""
    try:
        with (home / "config.toml").open("rb") as handle:
            settings = tomllib.load(handle)
    except FileNotFoundError:
        settings = {}
    except (OSError, tomllib.TOMLDecodeError):
        return None
    configured = settings.get("sqlite_home") if isinstance(settings, dict) else None
    chosen = configured if isinstance(configured, str) and configured else env.get("CODEX_SQLITE_HOME")
    return base / os.path.expanduser(chosen) if chosen else home


def _entries(program: Path, home: Path, databases: Path) -> Iterator[tuple[str, os.stat_result | None]]:
    """(label, stat or None when absent) for every file the fingerprint covers, in a
    stable order."""
    yield "program", _stat(program)
    for name in HOME_FILES:
        yield f"home/{name}", _stat(home / name)
    try:
        names = sorted(
            entry.name for entry in os.scandir(databases)
            if entry.name.startswith(DATABASE_PREFIXES) and entry.name.endswith(DATABASE_SUFFIXES)
        )
    except FileNotFoundError:
        names = []
    for name in names:
        info = _stat(databases / name)
        # An empty log holds nothing: Codex may remove it on exit or create it empty on
        # start, and either way the data is the same, so it counts as no file at all.
        if info is None or info.st_size > 0:
            yield f"db/{name}", info
    for tree in TREES:
        yield from _walk(home / tree, tree)


class Undecidable(Exception):
    """What Codex would read cannot be fingerprinted (a linked directory)."""


def _walk(directory: Path, label: str) -> Iterator[tuple[str, os.stat_result | None]]:
    """Every file below `directory`, depth first by name; a linked file counts by its
    target. A linked directory (which may loop, or change where we do not look) makes
    the home undecidable; a missing tree counts as absent."""
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except FileNotFoundError:
        yield f"{label}/", None
        return
    except NotADirectoryError:
        yield f"{label}/", _stat(directory)
        return
    for entry in entries:
        name = f"{label}/{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(Path(entry.path), name)
        elif entry.is_symlink() and entry.is_dir():
            raise Undecidable(name)
        else:
            try:
                yield name, entry.stat()
            except FileNotFoundError:
                yield name, None  # removed while walking: differs from before and after


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None

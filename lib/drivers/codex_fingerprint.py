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

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lib.drivers.base import InventoryFingerprint
from lib.drivers.codex_early import take_fingerprint
from lib.drivers.codex_home_files import (
    DATABASE_PREFIXES,
    DATABASE_SUFFIXES,
    HOME_FILES,
    REQUIREMENTS_FILE,
    TREES,
    find_codex_program,
    home_digest,
)
from lib.drivers.codex_launch import child_environment

if TYPE_CHECKING:
    from lib.types import AgentSourceConfig

__all__ = ["DATABASE_PREFIXES", "DATABASE_SUFFIXES", "HOME_FILES", "REQUIREMENTS_FILE", "TREES",
           "codex_inventory_fingerprint", "database_directory", "fingerprint_plan", "inventory_fingerprint"]


def inventory_fingerprint(config: AgentSourceConfig) -> InventoryFingerprint | None:
    """`CodexAppServerDriver.inventory_fingerprint` (lib/drivers/registry.py calls it
    without importing the driver's transport)."""
    return codex_inventory_fingerprint(config)


def codex_inventory_fingerprint(
    config: AgentSourceConfig, environ: Mapping[str, str] | None = None
) -> InventoryFingerprint | None:
    environ = os.environ if environ is None else environ
    plan = fingerprint_plan(config, environ)
    if plan is None:
        return None
    program = find_codex_program(plan["codexBin"], environ)
    if program is None:
        return None  # the listing reports that; nothing to compare
    # taken before the idle fast path started this home's Codex (codex_early.py), else now
    taken = take_fingerprint(program, plan["home"], plan["databases"]) or home_digest(
        program, plan["home"], plan["databases"])
    if taken is None:
        return None
    return InventoryFingerprint(digest=taken.digest, files=taken.files, newest_change_ns=taken.newest_change_ns,
                                taken_ns=taken.taken_ns)


def fingerprint_plan(config: AgentSourceConfig, environ: Mapping[str, str]) -> dict[str, Any] | None:
    """Where the fingerprint looks, as plain data: the `codexBin` to look the program up
    by, the home and the databases' directory (absolute). None when what Codex reads
    cannot be told from here (an explicit command, proxy mode, an unreadable config.toml).
    Kept beside the fingerprints for the idle fast path, which takes the same digest
    from it (the environment and the configuration being the same), and, under `launch`
    for a `stdio` source without `env`, starts Codex from it when the home changed
    (codex_early.py; no environment value is kept, only the working directory and the
    CODEX_HOME the configuration sets)."""
    if config.command or config.codex_transport == "proxy":
        return None
    env = child_environment(config, environ)
    base = Path(config.cwd) if config.cwd else Path.cwd()
    home = base / os.path.expanduser(env.get("CODEX_HOME") or "~/.codex")
    databases = database_directory(home, env, base)
    if databases is None:
        return None
    plan: dict[str, Any] = {"codexBin": config.codex_bin, "home": str(home), "databases": str(databases)}
    if config.codex_transport == "stdio" and not config.env:
        # what the fast path needs to start this Codex as the driver would (codex_early.py)
        plan["launch"] = {"cwd": config.cwd, "codexHome": env.get("CODEX_HOME") if config.codex_home else None,
                          "oneCpu": config.collect_on_one_cpu}
    return plan


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

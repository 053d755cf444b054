"""Codex started by the idle fast path, before the normal path's imports.

When `agentctl sync` cannot be answered from the kept idle answer because a source's Codex
home changed (its digest differs from the one the answer was kept with), that source will
be listed, so cli/fast_sync.py starts its `codex app-server` at once (`start`), about half
a second before the normal path (click, pydantic, the store, the stages) would: Codex's
own start-up then overlaps our imports. Standard library only: the fast path imports this.

The normal path then uses what was started, or ends it:

- `take_fingerprint`: the home's digest the fast path took *before* it started Codex
  becomes the source's inventory fingerprint (codex_fingerprint.py), once; a fingerprint
  must predate anything Codex does to its home (lib/pipeline/unchanged_sources.py).
- `adopt`: the driver's start (codex_app_server.py) takes the running child instead of
  spawning one, only when its planned launch (program and arguments, the whole
  environment, the working directory) is exactly the one started here.
- `lend_fingerprints`: digests a caller has just taken (the normal path's decision of
  the next run's idle answer, lib/pipeline/sync.py) are what the fingerprints of those
  homes take, once each, until `end_lending`: the home is walked once, not twice.
- `discard`: every child not adopted is ended (stdin closed, then as
  child_process.end does): `run_sync` calls it once it has started what it needs, and
  at exit it runs whatever happened (an error, an idle run, ^C). A child whose agentctl
  was killed outright sees its stdin close and exits (Codex does within milliseconds).

Only `stdio` launches are started here, from the facts codex_fingerprint.py's plan keeps
for this (`launch`: the working directory and CODEX_HOME) and only for sources whose
configuration sets no `command` and no `env`: the fast path does not read the
configuration, and a launch it cannot rebuild exactly is left to the driver.
"""

from __future__ import annotations

import atexit
import threading

TYPE_CHECKING = False  # typing itself is not imported on the fast path
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Mapping, Sequence
    from typing import Any

_lock = threading.Lock()
_started: list[_Early] = []
_registered = False
_lent: dict[tuple[str, str, str], Any] = {}  # (program, home, databases) -> HomeDigest


class _Early:
    __slots__ = ("argv", "env", "cwd", "process", "home", "fingerprint")

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | None, process: subprocess.Popen[bytes],
                 home: tuple[str, str, str], fingerprint: Any) -> None:
        self.argv, self.env, self.cwd, self.process = argv, env, cwd, process
        self.home = home  # (program, home, databases): what the fingerprint covers
        self.fingerprint = fingerprint  # codex_home_files.HomeDigest, taken before the start; None once taken


def stdio_argv(program: str) -> list[str]:
    """codex_launch.plan_launch's `stdio` command line."""
    return [program, "app-server", "--listen", "stdio://"]


def start(recipe: Mapping[str, Any], program: str, fingerprint: Any, environ: Mapping[str, str]) -> bool:
    """Start the Codex of a source whose home changed (`recipe`: its kept fingerprint
    plan, with `launch`); `fingerprint` was taken before this. False when the launch
    cannot be rebuilt here or the child cannot be spawned (the driver starts it then)."""
    launch = recipe.get("launch")
    if not isinstance(launch, dict):
        return False
    codex_home, cwd = launch.get("codexHome"), launch.get("cwd")
    if not (codex_home is None or isinstance(codex_home, str)) or not (cwd is None or isinstance(cwd, str)):
        return False
    env = dict(environ)
    if codex_home:
        env["CODEX_HOME"] = codex_home
    argv = stdio_argv(program)
    from lib.drivers import child_process

    try:
        process = child_process.spawn(argv, env, cwd)
    except OSError:
        return False
    global _registered
    with _lock:
        _started.append(_Early(argv, env, cwd, process, (program, recipe["home"], recipe["databases"]), fingerprint))
        if not _registered:
            atexit.register(discard)
            _registered = True
    return True


def take_fingerprint(program: str, home: str, databases: str) -> Any:
    """The digest taken before this home's Codex was started early, or the one lent for
    it (`lend_fingerprints`), once; None when there is neither."""
    with _lock:
        for early in _started:
            if early.home == (program, home, databases) and early.fingerprint is not None:
                fingerprint, early.fingerprint = early.fingerprint, None
                return fingerprint
        return _lent.pop((program, home, databases), None)


def lend_fingerprints(digests: Mapping[tuple[str, str, str], Any]) -> None:
    """Digests just taken, by (program, home, databases): the next fingerprint of each
    home takes its own (once) instead of walking the home again. For a caller that
    observed the homes right before a decision that fingerprints them; it must call
    `end_lending` when the decision is made (a digest lent and not taken goes stale)."""
    with _lock:
        _lent.update(digests)


def end_lending() -> None:
    with _lock:
        _lent.clear()


def adopt(argv: Sequence[str], env: Mapping[str, str], cwd: str | None) -> subprocess.Popen[bytes] | None:
    """The child started early with exactly this launch, now the caller's; None if none
    (or it has exited already: it is reaped here and the caller spawns its own)."""
    with _lock:
        for index, early in enumerate(_started):
            if early.argv == list(argv) and early.env == dict(env) and early.cwd == cwd:
                del _started[index]
                break
        else:
            return None
    if early.process.poll() is not None:
        _end(early)
        return None
    return early.process


def started() -> int:
    """How many children started early are not adopted yet (for tests)."""
    with _lock:
        return len(_started)


def discard() -> None:
    """End every child started early and not adopted."""
    with _lock:
        left = list(_started)
        _started.clear()
    for early in left:
        _end(early)


def _end(early: _Early) -> None:
    from lib.drivers import child_process

    for stream in (early.process.stdin, early.process.stdout, early.process.stderr):
        try:
            if stream is not None:
                stream.close()  # stdin closed: Codex exits within milliseconds
        except OSError:
            pass
    child_process.end(early.process, hung=False)


def pid_of_started() -> list[int]:
    """The process ids of the children not adopted yet (for tests)."""
    with _lock:
        return [early.process.pid for early in _started]



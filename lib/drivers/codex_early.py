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
  environment, the working directory) is exactly the one started here. A child started
  with its early listing (codex_early_list.py: `initialize` and the first `thread/list`
  pages asked while the normal path imports) comes with that exchange's answers; its
  pages only when the listing's observation sequence, allocated before them by the fast
  path (`allow_listing`), is the one the run took (`take_sequence`).
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
    from collections.abc import Callable, Mapping
    from typing import Any

    from lib.drivers.codex_early_list import EarlyListing

_lock = threading.Lock()
_started: list[_Early] = []
_registered = False
_lent: dict[tuple[str, str, str], Any] = {}  # (program, home, databases) -> HomeDigest


class _Early:
    __slots__ = ("argv", "env", "cwd", "one_cpu", "process", "home", "fingerprint", "source_id", "listing",
                 "sequence", "sequence_taken")

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | None, process: subprocess.Popen[bytes],
                 home: tuple[str, str, str], fingerprint: Any, *, one_cpu: bool = False) -> None:
        self.argv, self.env, self.cwd, self.process = argv, env, cwd, process
        self.one_cpu = one_cpu  # started on one CPU, as a collecting driver starts it (one_cpu.py)
        self.home = home  # (program, home, databases): what the fingerprint covers
        self.fingerprint = fingerprint  # codex_home_files.HomeDigest, taken before the start; None once taken
        self.source_id: str | None = None
        self.listing: EarlyListing | None = None  # the early exchange (codex_early_list.py), if asked
        self.sequence: tuple[str, int] | None = None  # (observation origin, sequence) its pages follow
        self.sequence_taken = False


class Adopted:
    """A child started early, now the driver's, with its early `initialize` answer."""

    __slots__ = ("process", "initialized")

    def __init__(self, process: subprocess.Popen[bytes], initialized: dict[str, Any] | None = None) -> None:
        self.process = process
        self.initialized = initialized  # answered early: the driver neither asks nor says `initialized`


def stdio_argv(program: str) -> list[str]:
    """codex_launch.plan_launch's `stdio` command line."""
    return [program, "app-server", "--listen", "stdio://"]


def start(recipe: Mapping[str, Any], program: str, fingerprint: Any, environ: Mapping[str, str], *,
          source_id: str | None = None, client_version: str | None = None) -> bool:
    """Start the Codex of a source whose home changed (`recipe`: its kept fingerprint
    plan, with `launch`); `fingerprint` was taken before this. False when the launch
    cannot be rebuilt here or the child cannot be spawned (the driver starts it then).
    With `client_version`, the child is initialized at once, as the driver would
    initialize it, and lists once `allow_listing(source_id, ...)` is called."""
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
    one_cpu = launch.get("oneCpu") is True  # the fast path only collects
    from lib.drivers import child_process

    try:
        process = child_process.spawn(argv, env, cwd, one_cpu=one_cpu)
    except OSError:
        return False
    early = _Early(argv, env, cwd, process, (program, recipe["home"], recipe["databases"]), fingerprint,
                   one_cpu=one_cpu)
    if client_version is not None and source_id is not None:
        from lib.drivers.codex_early_list import EarlyListing

        early.source_id = source_id
        early.listing = EarlyListing(process, client_version)
        early.listing.start()
    global _registered
    with _lock:
        _started.append(early)
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


def allow_listing(source_id: str, origin: str, sequence: int) -> bool:
    """The observation sequence of `source_id` is allocated (`origin`: the store and space
    it counts in): its early child may list now. False when none is waiting to."""
    with _lock:
        for early in _started:
            if early.source_id == source_id and early.listing is not None and early.sequence is None:
                early.sequence = (origin, sequence)
                early.listing.allow_listing()
                return True
    return False


def settle_listings() -> None:
    """Every child started early that was not allowed to list is told it will not be
    (it stops waiting for a sequence: `initialize` alone, the driver lists)."""
    with _lock:
        for early in _started:
            if early.listing is not None and early.sequence is None:
                early.listing.no_listing()


def take_sequence(source_id: str, origin: Callable[[], str]) -> int | None:
    """The sequence allocated for `source_id`'s early listing, once, when it counts in the
    run's `origin()` (its store and space); a run that takes it lists from it, so the
    pages asked after it are the driver's to use."""
    with _lock:
        found = [early for early in _started if early.source_id == source_id and early.sequence is not None
                 and not early.sequence_taken]
    if not found or found[0].sequence[0] != origin():
        return None
    found[0].sequence_taken = True
    return found[0].sequence[1]


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


def adopt(launch: Any, driver: Any = None, client_version: Callable[[], str] | None = None) -> Adopted | None:
    """The child started early with exactly this launch (codex_launch.Launch), now the
    driver's; None if none (or it has exited already, or its early exchange went wrong,
    was not with the driver's `client_version()` (asked only then: it reads the installed
    metadata) or did not end within the driver's stall timeout:
    it is ended here and the driver spawns its own). The early listing's pages go into
    `driver.listing` (codex_list_ahead.py) when the run listed from their sequence."""
    argv, env, cwd = launch.argv, launch.env, launch.cwd
    with _lock:
        for index, early in enumerate(_started):
            if (early.argv == list(argv) and early.env == dict(env) and early.cwd == cwd
                    and early.one_cpu == launch.one_cpu):
                del _started[index]
                break
        else:
            return None
    if early.process.poll() is not None:
        _end(early)
        return None
    if early.listing is None:
        return Adopted(early.process)
    right = driver is not None and client_version is not None and early.listing.client_version == client_version()
    handed = early.listing.hand_over(driver.stall_timeout) if right else None
    if handed is None:
        _end(early)
        return None
    initialized, pages = handed
    if early.sequence_taken and pages:  # asked after the sequence this run lists from
        from lib.drivers.codex_list_ahead import early_pages

        driver.listing.preload(early_pages(pages, driver.page_size))
    return Adopted(early.process, initialized)


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

    _close(early.process.stdin)  # stdin closed: Codex exits within milliseconds
    # An early listing's thread may be reading its stdout, and a reader holds the stream
    # until its read returns: then the output is closed once the child has ended.
    outputs = (early.process.stdout, early.process.stderr)
    if early.listing is None:
        for stream in outputs:
            _close(stream)
    child_process.end(early.process, hung=False)
    for stream in outputs:
        _close(stream)


def _close(stream: Any) -> None:
    try:
        if stream is not None:
            stream.close()
    except (OSError, ValueError):
        pass


def pid_of_started() -> list[int]:
    """The process ids of the children not adopted yet (for tests)."""
    with _lock:
        return [early.process.pid for early in _started]



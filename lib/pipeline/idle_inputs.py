"""What an idle sync's answer depends on, observed on plain data, and the kept answer.

`agentctl sync` on an unchanged home (every source unchanged: lib/pipeline/sync.py
answers with `UnchangedSources.idle_publication`) prints records that depend only on:
the environment, the working directory, agentctl's own code, the configuration file's
bytes (or, without one, which built-in homes exist), the identity file's bytes, the
state directory, the store's meta rows and index roots, the kept fingerprints and
publication (unchanged_sources.py), and each source's home fingerprint. When the normal
path has made that decision, it keeps the records it printed (or would print) together
with those inputs as they were just before and just after the decision, in one file:

    <state dir>/inventory-fingerprints/idle-answer    (0600, JSON, "format": 1)

`answer` (the fast path, cli/fast_sync.py) observes the same inputs again, without
click, pydantic or cryptography, and returns the kept lines only when every one is
equal; in any doubt it returns None and the normal path runs. Only the standard library
and lib/drivers/codex_home_files.py are imported here.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys

TYPE_CHECKING = False  # typing itself is not imported on the fast path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

DIRECTORY = "inventory-fingerprints"
FILE_NAME = "idle-answer"
FORMAT = 1
MAX_BYTES = 4 * 1024 * 1024
# Set (to anything) to turn the fast path off; not part of the environment's digest, so a
# run with it set keeps an answer the fast path may give later.
DISABLE_VARIABLE = "AGENTCTL_NO_IDLE_FAST_PATH"
# Variables a shell changes from one command to the next that nothing of agentctl reads.
IGNORED_VARIABLES = frozenset({"_", "OLDPWD", DISABLE_VARIABLE})
_PLAN_KEYS = ("stateDir", "configPath", "builtinHomes", "identityPath", "storePath", "space", "roots", "books",
              "sources")


class Undecided(Exception):
    """An input cannot be observed, or is not as the normal path would use it without a
    word (a loose mode, a link, another owner): the normal path decides."""


# -- where things are ----------------------------------------------------------------------


def state_directory(environ: Mapping[str, str]) -> str:
    """The state directory of a run with no --state-dir: AGENTCTL_STATE_DIR (when not
    empty, relative to the working directory), else `$XDG_STATE_HOME/agentctl`, else
    `~/.local/state/agentctl` (lib/workspace.py's rule; the kept answer names the one
    the normal path used, and is used only when they are equal)."""
    given = environ.get("AGENTCTL_STATE_DIR")
    if given:
        return _as_path(os.path.join(os.getcwd(), os.path.expanduser(given)))
    base = environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return _as_path(os.path.join(base, "agentctl"))


def _as_path(text: str) -> str:
    """`str(pathlib.Path(text))` for a POSIX path, without importing pathlib: empty and
    `.` parts dropped, a leading `//` kept."""
    parts = [part for part in text.split("/") if part and part != "."]
    root = "//" if text.startswith("//") and not text.startswith("///") else "/" if text.startswith("/") else ""
    return root + "/".join(parts) or "."


def answer_path(state_dir: str) -> str:
    return os.path.join(state_dir, DIRECTORY, FILE_NAME)


# -- observing -------------------------------------------------------------------------------


def observe(plan: Mapping[str, Any], environ: Mapping[str, str], taken: dict[str, Any] | None = None,
            walked: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every input of the idle answer `plan` names, as digests and flags (Undecided when
    one cannot be told). With `taken`, each source's home digest is also left there as
    `((program, home, databases), HomeDigest)`, so a caller that needs that digest again
    right after does not walk the home twice (a walk of 3,000 rollouts is 30-60 ms).
    `walked`: digests of some sources' homes this run took just before (a HomeDigest's
    fields, by source id), used instead of walking them again."""
    _private(plan["stateDir"], directory=True)
    return {
        "environment": environment_digest(environ),
        "code": code_stamp(),
        "cwd": os.getcwd(),
        "config": _file_digest(plan["configPath"], missing_ok=True),
        "homes": [os.path.isdir(path) for path in plan["builtinHomes"] or ()],
        "identity": _identity_digest(plan["identityPath"]),
        "store": store_token(plan["storePath"], plan["space"], plan["roots"]),
        "books": {name: _file_digest(os.path.join(plan["stateDir"], DIRECTORY, name), missing_ok=True)
                  for name in plan["books"]},
        "fingerprints": {source: _home_digest(recipe, environ, taken, source, (walked or {}).get(source))
                         for source, recipe in plan["sources"].items()},
    }


def environment_digest(environ: Mapping[str, str]) -> str:
    """The whole environment but IGNORED_VARIABLES, as one digest (no value is kept)."""
    digest = hashlib.sha256()
    for name in sorted(environ):
        if name not in IGNORED_VARIABLES:
            digest.update(f"{name}={environ[name]}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def code_stamp() -> str:
    """The interpreter, and the size, time and inode of every file of the `lib` and `cli`
    packages (cli/version.py among them): an answer kept by other code is not given."""
    digest = hashlib.sha256(f"{sys.version}\0{sys.executable}\n".encode())
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # lib/
    for package in (here, os.path.join(os.path.dirname(here), "cli")):
        _stamp_tree(package, digest)
    return digest.hexdigest()


def _stamp_tree(directory: str, digest: Any) -> None:
    with os.scandir(directory) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        if entry.name == "__pycache__":
            continue
        if entry.is_dir(follow_symlinks=False):
            _stamp_tree(entry.path, digest)
        elif entry.name.endswith((".py", ".so")):
            info = entry.stat()
            digest.update(f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ino}\n".encode(
                "utf-8", "surrogateescape"))


def _private(path: str, *, directory: bool, strict_mode: int = 0o077) -> os.stat_result:
    """lstat `path`: the user's own, of the right kind, not a link, no mode bit in
    `strict_mode` (what the normal path would tighten or refuse)."""
    try:
        info = os.lstat(path)
    except OSError:
        raise Undecided(path) from None
    kind = stat.S_ISDIR if directory else stat.S_ISREG
    if not kind(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & strict_mode:
        raise Undecided(path)
    return info


def _file_digest(path: str | None, *, missing_ok: bool = False) -> str | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except FileNotFoundError:
        if missing_ok:
            return None
        raise Undecided(path) from None
    except OSError:
        raise Undecided(path) from None


def _identity_digest(path: str) -> str:
    """The identity file's bytes, when lib/fabric/identity.py would load it without a
    word: a regular file (not a link) of this user, closed to group and others."""
    return hashlib.sha256(_read_private_file(path, os.getuid())).hexdigest()


def _read_private_file(path: str, owner: int, limit: int = -1) -> bytes:
    """The bytes (up to `limit`) of a regular file, not a link, owned by `owner` and
    closed to group and others; Undecided otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        raise Undecided(path) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != owner or info.st_mode & 0o077:
            raise Undecided(path)
        return handle.read(limit)


def _home_digest(recipe: Mapping[str, Any], environ: Mapping[str, str], taken: dict[str, Any] | None = None,
                 source: str = "", walked: Any = None) -> str:
    from lib.drivers.codex_home_files import find_codex_program, home_digest

    if recipe.get("kind") != "codex-home":
        raise Undecided("a source kind the fast path does not know")
    program = find_codex_program(recipe["codexBin"], environ)
    if program is None:
        digest = None
    else:
        digest = walked or home_digest(program, recipe["home"], recipe["databases"])
    if digest is None:
        raise Undecided("no fingerprint")
    if taken is not None:
        taken[source] = ((program, recipe["home"], recipe["databases"]), digest)
    return digest.digest


def connect_store(path: str) -> Any:
    """A sqlite3 connection to the store file `path`, never creating it (Undecided when
    it cannot be opened)."""
    import sqlite3

    # `//x` is `/x` here; a URI's `//` would start an authority. mode=rw: never create it.
    absolute = "/" + path.lstrip("/")
    uri = "file:" + absolute.replace("%", "%25").replace("?", "%3f").replace("#", "%23") + "?mode=rw"
    try:
        return sqlite3.connect(uri, uri=True, timeout=30.0, isolation_level=None)
    except sqlite3.Error:
        raise Undecided(path) from None


def store_token(path: str, space: str, roots: list[list[str]]) -> dict[str, Any]:
    """The store's files checked as lib/fabric/sqlite_files.py checks them, and what an
    idle sync reads of it: the meta rows, the space's row, the index, health and receipt
    roots' presence and labels, and the recent index's sequence (its generation)."""
    import sqlite3

    _private(path, directory=False)
    for companion in (f"{path}-wal", f"{path}-shm"):
        if os.path.lexists(companion):
            _private(companion, directory=False)
    locks = os.path.realpath(path) + ".locks"
    if os.path.lexists(locks):
        _private(locks, directory=True, strict_mode=0o022)
    keys = [bytes.fromhex(value) if kind == "b" else value for kind, value in roots]
    conn = connect_store(path)
    try:
        conn.execute("BEGIN")
        meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('schemaVersion', 'storeId')"))
        row = conn.execute("SELECT id FROM spaces WHERE did = ?", (space,)).fetchone()
        documents: dict[Any, tuple[int, bool, str | None]] = {}
        if row is not None:
            marks = ", ".join("?" * len(keys))
            for cell, seq, deleted, labels in conn.execute(
                f"SELECT d.cell_id, d.seq, d.value IS NULL, l.json FROM documents AS d "
                f"LEFT JOIN labels AS l ON l.id = d.labels_id WHERE d.space_id = ? AND d.cell_id IN ({marks})",
                (row[0], *keys),
            ):
                documents[cell] = (seq, bool(deleted), labels)
        conn.execute("COMMIT")
    except sqlite3.Error:
        raise Undecided(path) from None
    finally:
        conn.close()
    found = []
    for index, key in enumerate(keys):
        seq, deleted, labels = documents.get(key, (None, True, None))
        # the recent index (first) by its sequence: a publication moves it; the others by
        # presence and labels, so a receipt written since does not count
        found.append([seq if index == 0 else None, deleted, labels])
    return {"meta": meta, "space": None if row is None else row[0], "roots": found}


# -- the kept answer ---------------------------------------------------------------------------


def save_answer(state_dir: str, value: dict[str, Any]) -> None:
    """Written whole or not at all: a new private file renamed over the old one."""
    directory = os.path.join(state_dir, DIRECTORY)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = answer_path(state_dir)
    temporary = os.path.join(directory, f".{FILE_NAME}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({**value, "format": FORMAT}, handle, ensure_ascii=False, separators=(",", ":"))
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def forget_answer(state_dir: str) -> None:
    try:
        os.unlink(answer_path(state_dir))
    except FileNotFoundError:
        pass


def load_answer(state_dir: str) -> dict[str, Any]:
    """The kept answer, only when it is ours: a regular file (never through a link) of
    this user, mode 0600 or tighter, in our own private directory, of this format."""
    directory = os.path.join(state_dir, DIRECTORY)
    _private(directory, directory=True, strict_mode=0o022)
    path = answer_path(state_dir)
    raw = _read_private_file(path, os.geteuid(), MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise Undecided(path)
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError:
        raise Undecided(path) from None
    if not _well_formed(value):
        raise Undecided(path)
    return value


def _well_formed(value: Any) -> bool:
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        return False
    plan, request, lines = value.get("plan"), value.get("request"), value.get("lines")
    return (
        isinstance(plan, dict) and all(key in plan for key in _PLAN_KEYS)
        and isinstance(plan["sources"], dict) and isinstance(plan["books"], list)
        and isinstance(plan["roots"], list) and len(plan["roots"]) == 4
        and all(isinstance(r, list) and len(r) == 2 and r[0] in ("s", "b") and isinstance(r[1], str)
                for r in plan["roots"])
        and isinstance(request, list) and all(isinstance(name, str) for name in request)
        and isinstance(value.get("inputs"), dict)
        and isinstance(lines, list) and lines and all(isinstance(line, str) and line.endswith("\n")
                                                      for line in lines)
    )


def answer(names: list[str], environ: Mapping[str, str], taken: dict[str, Any] | None = None) -> list[str] | None:
    """The lines the normal path would print for `agentctl sync NAMES` now, when it kept
    them for exactly these inputs; None (the normal path decides) otherwise. `taken`:
    the home digests observed, as `observe` leaves them (for the early start)."""
    if environ.get(DISABLE_VARIABLE):
        return None
    try:
        state_dir = state_directory(environ)
        kept = load_answer(state_dir)
        plan = kept["plan"]
        if kept["request"] != names or plan["stateDir"] != state_dir:
            return None
        # The homes first: one that changed refuses the answer whatever the rest is, and
        # its Codex is started (idle_early_start.py) without waiting for the code's stamp
        # or the store's token (a few ms of CPU, tens of ms on a cold cache).
        homes: dict[str, Any] = {} if taken is None else taken
        fingerprints = {source: _home_digest(recipe, environ, homes, source)
                        for source, recipe in plan["sources"].items()}
        if fingerprints != kept["inputs"].get("fingerprints"):
            return None
        walked = {source: digest for source, (_, digest) in homes.items()}
        if observe(plan, environ, taken, walked) != kept["inputs"]:
            return None
    except Exception:  # noqa: BLE001 - in any doubt the normal path decides (and says what is wrong)
        return None
    return kept["lines"]

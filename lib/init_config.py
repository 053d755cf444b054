"""`agentctl init`: a first configuration file and the identity, each created once.

`find_sources` looks at this machine: a Codex home, a Claude configuration directory,
and ACP agent programs on PATH. `render_config` writes what it found as a commented
TOML file that `lib.config.load_config` reads (the sources not found appear as
commented-out examples, each line of TOML commented with `#` and no space, so that
removing the `#` gives a valid table). `initialize` creates the identity when it is
absent and the configuration file when it is absent, and changes nothing else: an
existing file, even one init wrote, is left as it is.

The file is created mode 0600, in a directory created 0700 when missing, through a
temporary file published with a no-replace link (never replacing what appeared
meanwhile, never following a symbolic link).
"""

from __future__ import annotations

import errno
import os
import secrets
import shlex
import shutil
import stat
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lib.config import builtin_source_homes, default_config_path
from lib.errors import CodedError, ExitCode, UsageError
from lib.workspace import Workspace, default_state_dir


@dataclass(frozen=True)
class AcpAgent:
    """An ACP agent program init knows: its source id, program, ACP arguments and a note."""

    id: str
    program: str
    args: tuple[str, ...]
    note: str


# The ACP agents of docs research (shared/research/acp.md, "Real third-party agents").
ACP_AGENTS: tuple[AcpAgent, ...] = (
    AcpAgent("claude-agent-acp", "claude-agent-acp", (),
             "Claude Code over ACP (npm @agentclientprotocol/claude-agent-acp)"),
    AcpAgent("claude-code-acp", "claude-code-acp", (),
             "Claude Code over ACP, the older adapter (npm @zed-industries/claude-code-acp)"),
    AcpAgent("codex-acp", "codex-acp", (),
             "Codex over ACP (npm @zed-industries/codex-acp); it answers nothing until it is "
             "authenticated: give it CODEX_API_KEY in env"),
    AcpAgent("gemini", "gemini", ("--acp",),
             "Gemini CLI; it cannot list its sessions (no session/list), so a sync finds none"),
)


@dataclass(frozen=True)
class FoundSource:
    """One `[sources.ID]` table: written live when found, else as a commented example."""

    id: str
    driver: str
    keys: tuple[tuple[str, object], ...]  # (TOML key, value) after `driver`, in order
    found: bool
    comment: str
    enabled: bool = True

    def record(self) -> dict[str, object]:
        return {"id": self.id, "driver": self.driver, "enabled": self.enabled}


@dataclass
class InitResult:
    config_path: Path
    config_created: bool
    identity_path: Path
    identity_created: bool
    did: str
    state_dir: Path
    sources: list[FoundSource] = field(default_factory=list)  # what the file holds (only when created)

    def record(self) -> dict[str, object]:
        return {
            "record": "init",
            "config": str(self.config_path),
            "configCreated": self.config_created,
            "identity": str(self.identity_path),
            "identityCreated": self.identity_created,
            "did": self.did,
            "stateDir": str(self.state_dir),
            "sources": [s.record() for s in self.sources if s.found],
        }


def find_sources(environ: Mapping[str, str] | None = None) -> list[FoundSource]:
    """The sources of this machine, found or not (in the order they are written)."""
    env = os.environ if environ is None else environ
    homes = builtin_source_homes(env)
    codex, claude = homes["codex"], homes["claude"]
    sources = [
        FoundSource("codex", "codex-app-server", (("codexHome", str(codex)),), codex.is_dir(),
                    f"Codex sessions in {codex}" if codex.is_dir()
                    else f"no Codex home found ({codex}; CODEX_HOME chooses another)"),
        FoundSource("claude", "claude-agent-sdk", (("configDir", str(claude)),), claude.is_dir(),
                    f"Claude Code sessions in {claude}" if claude.is_dir()
                    else f"no Claude configuration directory found ({claude}; CLAUDE_CONFIG_DIR chooses another)"),
    ]
    search_path = env.get("PATH", os.defpath)
    for agent in ACP_AGENTS:
        program = shutil.which(agent.program, path=search_path)
        if program is not None:
            comment = (f"{agent.note}.\nFound on PATH at {program}. Disabled until you confirm it is the "
                       "ACP agent you want synced: set enabled = true")
            command = [program, *agent.args]
        else:
            comment = f"{agent.note}; not found on PATH"
            command = [agent.program, *agent.args]
        sources.append(FoundSource(agent.id, "acp", (("command", command),), program is not None, comment,
                                   enabled=False))
    return sources


def toml_value(value: object) -> str:
    """A TOML basic string, boolean or array of strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, str):
        out = []
        for char in value:
            if char in ('"', "\\"):
                out.append("\\" + char)
            elif char < " " or char == "\x7f":
                out.append(f"\\u{ord(char):04x}")
            else:
                out.append(char)
        return '"' + "".join(out) + '"'
    raise TypeError(f"no TOML form for {type(value).__name__}")


def render_config(sources: list[FoundSource], state_dir: Path, did: str) -> str:
    """The configuration file init writes: every found source live, the others as
    commented-out examples (`#key = value`, no space after `#`)."""
    lines = [
        "# agentctl configuration, written by `agentctl init`. It is yours to edit: agentctl",
        "# init never changes it again. Every key is described in the README (Configuration).",
        "# Unknown keys are errors naming the key and this file.",
        "",
        "# The store and the space default to an SQLite file in the state directory and to",
        "# your identity's DID (its own space):",
        f"#store = {toml_value('sqlite://' + str(state_dir / 'fabric.sqlite3'))}",
        f"#space = {toml_value(did)}",
        "",
    ]
    found = [s for s in sources if s.found]
    missing = [s for s in sources if not s.found]
    if found:
        lines.append("# Found on this machine:")
        lines.append("")
    for source in found:
        lines.extend(_table(source, commented=False))
    if missing:
        lines.append("# Not found on this machine; remove the # in front of a table and its keys to use it:")
        lines.append("")
    for source in missing:
        lines.extend(_table(source, commented=True))
    return "\n".join(lines).rstrip("\n") + "\n"


def _table(source: FoundSource, *, commented: bool) -> list[str]:
    mark = "#" if commented else ""
    out = [f"# {line}" for paragraph in source.comment.splitlines()
           for line in textwrap.wrap(paragraph, 86, break_long_words=False, break_on_hyphens=False)]
    out.append(f"{mark}[sources.{source.id}]")
    out.append(f"{mark}driver = {toml_value(source.driver)}")
    out.extend(f"{mark}{key} = {toml_value(value)}" for key, value in source.keys)
    if not source.enabled:
        out.append(f"{mark}enabled = false")
    out.append("")
    return out


class ConfigFileError(UsageError):
    """The configuration path cannot take a new file; the message says what to do."""


class ConfigWriteFailed(CodedError):
    """Writing the file failed for a reason the user did not cause (a full disk, I/O)."""

    exit_code = ExitCode.FAILURE


# errno values that mean "choose another path" (exit 2) rather than "the write failed" (exit 1)
_USAGE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.ENOENT, errno.EEXIST, errno.EISDIR,
                 errno.ELOOP, errno.ENAMETOOLONG}


def _failure(path: Path, exc: OSError, doing: str) -> CodedError:
    message = (f"cannot {doing} configuration file {path} ({exc.strerror or exc}); "
               "choose another path with --config or AGENTCTL_CONFIG")
    if exc.errno in _USAGE_ERRNOS:
        return ConfigFileError("config-uncreatable", message)
    return ConfigWriteFailed("config-write-failed", message)


def config_state(path: Path) -> str:
    """"absent", or "present" (a regular file, or a symbolic link to one, which init
    leaves alone); ConfigFileError when the path cannot hold a configuration file."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        _check_parents(path)
        return "absent"
    except OSError as exc:
        raise _failure(path, exc, "check") from None
    if stat.S_ISREG(info.st_mode):
        return "present"
    if stat.S_ISLNK(info.st_mode):
        target = os.path.realpath(path)
        if os.path.isfile(path):
            return "present"
        raise ConfigFileError(
            "config-path-symlink",
            f"configuration file {path} is a symbolic link to {target}, which is not a file; agentctl init "
            "never writes through a symbolic link: remove it, or give --config the real path",
        )
    if stat.S_ISDIR(info.st_mode):
        raise ConfigFileError(
            "config-path-directory",
            f"configuration path {path} is a directory; give --config a file path, like {path / 'config.toml'}",
        )
    raise ConfigFileError("config-path-not-file",
                          f"configuration path {path} is not a regular file; give --config another path")


def _check_parents(path: Path) -> None:
    """The nearest existing ancestor of a missing file must be a directory."""
    for parent in path.parents:
        try:
            info = os.stat(parent)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise _failure(path, exc, "check") from None
        if not stat.S_ISDIR(info.st_mode):
            raise ConfigFileError("config-uncreatable",
                                  f"cannot create configuration file {path}: {parent} is not a directory; "
                                  "choose another path with --config or AGENTCTL_CONFIG")
        return


def make_directories(directory: Path) -> None:
    """Create `directory` and its missing parents, each mode 0700; existing ones are left as they are."""
    missing = []
    for candidate in (directory, *directory.parents):
        if os.path.lexists(candidate):
            break
        missing.append(candidate)
    for candidate in reversed(missing):
        try:
            os.mkdir(candidate, 0o700)
        except FileExistsError:
            continue
        os.chmod(candidate, 0o700, follow_symlinks=False)  # exactly 0700, whatever the umask


def write_new_file(path: Path, content: str) -> bool:
    """Create `path` holding `content`, mode 0600, atomically; False (and nothing
    changed) when something already exists there. OSError when it cannot be written."""
    directory = path.parent
    make_directories(directory)
    temp = directory / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(content.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temp, path, follow_symlinks=False)  # never replaces anything, unlike rename()
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            # a file system without hard links: rename, having checked nothing is there
            if os.path.lexists(path):
                return False
            os.rename(temp, path)
    finally:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
    dir_fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return True


def initialize(workspace: Workspace, environ: Mapping[str, str] | None = None) -> InitResult:
    """Create what is missing (the identity, the configuration file) and nothing else.

    The configuration path is checked before anything is created, so a bad one leaves
    the machine as it was."""
    env = os.environ if environ is None else environ
    path = workspace.config_path or default_config_path(env)
    state = config_state(path)
    identity_path = workspace.identity_file()
    identity_existed = os.path.lexists(identity_path)
    did = workspace.identity.did
    result = InitResult(config_path=path, config_created=False, identity_path=identity_path,
                        identity_created=not identity_existed, did=did, state_dir=workspace.state_path)
    if state == "present":
        return result
    sources = find_sources(env)
    try:
        created = write_new_file(path, render_config(sources, workspace.state_path, did))
    except OSError as exc:
        raise _failure(path, exc, "create") from None
    if created:
        result.config_created = True
        result.sources = sources
    return result


def next_steps(result: InitResult, environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """What to run next, as (command, what it does); the command carries --config,
    --state-dir or --identity when a plain `agentctl` here would use another path."""
    env = os.environ if environ is None else environ
    base = Path(os.getcwd())
    default_state = Path(env["AGENTCTL_STATE_DIR"]) if env.get("AGENTCTL_STATE_DIR") else default_state_dir(env)
    default_state = base / os.path.expanduser(default_state)
    default_identity = (base / os.path.expanduser(env["AGENTCTL_IDENTITY"]) if env.get("AGENTCTL_IDENTITY")
                        else result.state_dir / "identity.json")
    options = []
    if result.config_path != default_config_path(env):
        options.append(f"--config {shlex.quote(str(result.config_path))}")
    if result.state_dir != default_state:
        options.append(f"--state-dir {shlex.quote(str(result.state_dir))}")
    if result.identity_path != default_identity:
        options.append(f"--identity {shlex.quote(str(result.identity_path))}")
    prefix = " ".join(["agentctl", *options])
    return [
        (f"{prefix} sync", "collect every enabled source and publish its sessions"),
        (f"{prefix} sessions", "what was published"),
        (f"{prefix} serve", "keep them published and carry out commands (docs/running-as-a-service.md)"),
    ]

"""Git metadata for a session's working directory (the spec's GitContextResolver).

The resolver runs six read-only git commands per repository root and never inspects
repository contents. One observation is the lookup scope of one publication: equal
working directories and directories sharing a repository root reuse one result, and
failures are remembered only until the next observation, so a directory that becomes
a repository later acquires metadata.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeVar

from pydantic import ConfigDict

from lib.types import WireModel

RemoteDirection = Literal["fetch", "push"]

DEFAULT_GIT_TIMEOUT_SECONDS = 30.0

# Variables that would make git ignore `-C <dir>` and describe some other repository
# (they are set, for example, when agentctl runs inside a git hook).
_REPOSITORY_LOCATING_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


GitRunner = Callable[[list[str]], GitResult]
"""Runs git with these arguments (without the program name). Never raises."""


class SubprocessGitRunner:
    """The default runner: the real git binary, no shell, no prompts, C locale.

    A missing binary, a process that cannot start, and a timeout all come back as a
    failed `GitResult` (return code 127, 126 and 124, following shell conventions).
    """

    def __init__(
        self,
        *,
        executable: str = "git",
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_GIT_TIMEOUT_SECONDS,
    ) -> None:
        self.executable = executable
        self.timeout = timeout
        base = dict(os.environ if env is None else env)
        for name in _REPOSITORY_LOCATING_VARIABLES:
            base.pop(name, None)
        # No credential prompts, stable English output, and no opportunistic index
        # refresh locks while a user works in the same checkout.
        base.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_OPTIONAL_LOCKS="0")
        self.env = base

    def __call__(self, args: list[str]) -> GitResult:
        if args[:1] == ["-C"] and len(args) > 1 and not os.path.isdir(args[1]):
            # git would fail to enter it (exit 128, "cannot change to"): a session's
            # directory that is gone costs a stat, not a process (issue 14 goal 3)
            return GitResult(128, "")
        try:
            completed = subprocess.run(
                [self.executable, *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=self.env,
                timeout=self.timeout,
                check=False,
            )
        except FileNotFoundError:
            return GitResult(127, "")
        except subprocess.TimeoutExpired:
            return GitResult(124, "")
        except OSError:
            return GitResult(126, "")
        return GitResult(completed.returncode, completed.stdout.decode("utf-8", "replace"))


class _GitModel(WireModel):
    # Results are shared between directories within an observation: keep them immutable.
    model_config = ConfigDict(frozen=True)


class GitRemote(_GitModel):
    """One distinct sanitized URL of one remote, with every direction git uses it for.

    The fetch and push forms of an equal URL under one remote name are one entry with
    `directions == ("fetch", "push")`; a separate push URL is its own entry.
    """

    name: str
    url: str
    directions: tuple[RemoteDirection, ...]


class GitMetadata(_GitModel):
    """What one checkout looked like when it was observed (everything a checkout row holds)."""

    worktree_root: str
    branch: str | None = None
    commit: str | None = None
    repo: str | None = None
    remotes: tuple[GitRemote, ...] = ()
    observed_at: str

    def summary_fields(self) -> dict[str, str | None]:
        """What a session summary (and its index row) carries of this checkout. The one
        rule: observed metadata replaces all three fields (a detached HEAD clears the
        branch), since a summary describes the checkout as it is now."""
        return {"gitRepo": self.repo, "gitBranch": self.branch, "gitWorktreeRoot": self.worktree_root}


# The summary model's attribute for each wire field of GitMetadata.summary_fields.
_SUMMARY_FIELD_NAMES = {"git_repo": "gitRepo", "git_branch": "gitBranch", "git_worktree_root": "gitWorktreeRoot"}

Clock = Callable[[], datetime]
_Summary = TypeVar("_Summary", bound=WireModel)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def iso_timestamp(moment: datetime) -> str:
    """The UTC form JavaScript's Date.toISOString() writes: milliseconds and a Z."""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


class GitContextResolver:
    """Creates observation scopes; direct calls each use a fresh one."""

    def __init__(self, runner: GitRunner | None = None, *, clock: Clock | None = None) -> None:
        self.runner: GitRunner = runner if runner is not None else SubprocessGitRunner()
        self.clock: Clock = clock if clock is not None else _utc_now

    def begin_observation(self) -> GitObservation:
        return GitObservation(self.runner, self.clock)

    def resolve(self, cwd: str | os.PathLike[str] | None) -> GitMetadata | None:
        return self.begin_observation().resolve(cwd)

    def enrich(self, summary: _Summary) -> _Summary:
        return self.begin_observation().enrich(summary)


_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


class GitObservation:
    """One lookup scope: results and failures are shared until the scope is dropped."""

    def __init__(self, runner: GitRunner, clock: Clock) -> None:
        self._runner = runner
        self._clock = clock
        self._by_directory: dict[str, GitMetadata | None] = {}
        self._by_root: dict[str, GitMetadata] = {}
        # the answer per working directory as the session names it: the sessions of
        # one directory cost one realpath, not one each
        self._by_raw: dict[str, GitMetadata | None] = {}

    def resolve(self, cwd: str | os.PathLike[str] | None) -> GitMetadata | None:
        """Metadata for the checkout holding `cwd`, or None when there is none to be had.

        Only an absolute directory names a checkout: a relative or blank one would be
        resolved against agentctl's own working directory, whose checkout is not the
        session's."""
        path = os.fspath(cwd) if cwd is not None else ""
        if type(path) is str and path in self._by_raw:
            return self._by_raw[path]
        if not path.strip() or not os.path.isabs(path):
            return None
        directory = os.path.realpath(path)
        if directory in self._by_directory:
            metadata = self._by_directory[directory]
        else:
            metadata = self._lookup(directory)
            self._by_directory[directory] = metadata
        if type(path) is str:
            self._by_raw[path] = metadata
        return metadata

    def enrich(self, summary: _Summary) -> _Summary:
        """A copy of `summary` carrying the observed checkout (`GitMetadata.summary_fields`);
        no metadata leaves it as it is."""
        metadata = self.resolve(getattr(summary, "cwd", None))
        if metadata is None:
            return summary
        fields = metadata.summary_fields()
        return summary.model_copy(update={name: fields[wire] for name, wire in _SUMMARY_FIELD_NAMES.items()})

    def _git(self, directory: str, *args: str) -> GitResult:
        try:
            return self._runner(["-C", directory, *args])
        except Exception:  # an injected runner must not fail a publication either
            return GitResult(1, "")

    def _lookup(self, directory: str) -> GitMetadata | None:
        toplevel = self._git(directory, "rev-parse", "--show-toplevel")
        root = _single_line(toplevel)
        if root is None or not os.path.isabs(root):
            return None
        root = os.path.realpath(root)
        if root in self._by_root:
            return self._by_root[root]
        metadata = self._observe_root(directory, root)
        self._by_root[root] = metadata
        return metadata

    def _observe_root(self, directory: str, root: str) -> GitMetadata:
        # Only the root is required: each later failure empties just its own field
        # (a detached HEAD has no branch, an unborn branch no commit).
        branch = _single_line(self._git(directory, "branch", "--show-current"))
        selected = self._git(directory, "remote", "get-url", "upstream")
        if not selected.ok:
            selected = self._git(directory, "remote", "get-url", "origin")
        selected_url = _single_line(selected)
        commit = _single_line(self._git(directory, "rev-parse", "HEAD"))
        listing = self._git(directory, "remote", "-v")
        return GitMetadata(
            worktree_root=root,
            branch=branch,
            commit=commit if commit and _COMMIT.fullmatch(commit) else None,
            repo=sanitize_remote_url(selected_url) if selected_url else None,
            remotes=parse_remote_listing(listing.stdout) if listing.ok else (),
            observed_at=iso_timestamp(self._clock()),
        )


def _single_line(result: GitResult) -> str | None:
    """The first output line of a successful command, or None when empty or failed."""
    if not result.ok:
        return None
    line = result.stdout.split("\n", 1)[0].rstrip("\r")
    return line or None


_LISTING_LINE = re.compile(r"(?P<name>[^\t]+)\t(?P<url>.*) \((?P<direction>fetch|push)\)( \[.*\])?")


def parse_remote_listing(output: str) -> tuple[GitRemote, ...]:
    """`git remote -v` as sanitized remotes, in git's order, one entry per (name, url).

    Lines git adds a partial-clone filter to (`url (fetch) [blob:none]`) are understood;
    remotes whose URL sanitizing omits are left out.
    """
    entries: dict[tuple[str, str], list[RemoteDirection]] = {}
    for line in output.splitlines():
        match = _LISTING_LINE.fullmatch(line)
        if match is None:
            continue
        url = sanitize_remote_url(match["url"])
        if url is None:
            continue
        directions = entries.setdefault((match["name"], url), [])
        direction: RemoteDirection = "fetch" if match["direction"] == "fetch" else "push"
        if direction not in directions:
            directions.append(direction)
    return tuple(
        GitRemote(name=name, url=url, directions=tuple(sorted(directions)))
        for (name, url), directions in entries.items()
    )


_SCHEME = r"[A-Za-z][A-Za-z0-9+.-]*"
_HELPER_FORM = re.compile(_SCHEME + "::")
_URL_FORM = re.compile(f"(?P<scheme>{_SCHEME})://(?P<rest>.*)", re.DOTALL)
_PORT = re.compile(r"[0-9]*")
_DOS_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# SCP-like `[userinfo@]host:path`: the userinfo runs to the last `@` before the host; the
# host is a name or brackets (`[::1]`, `[host:22]`, `[user@::1]`); the path holds no `@`.
_SCP_FORM = re.compile(
    r"(?:[^\[]*@)?(?P<host>\[(?:[^\]@]*@)?(?P<inner>[^\]@]+)\]|[^@:/\[\]]+):(?P<path>[^@]*)", re.DOTALL
)
_QUERY_OR_FRAGMENT = re.compile(r"[?#]")


def sanitize_remote_url(url: str) -> str | None:
    """The publishable spelling of a remote URL, or None when it must not be published.

    No userinfo survives, in any form: not a token, not a password, not a login name
    (`git@`), percent-encoded or not. Query strings and fragments are cut everywhere.
    - `scheme://[userinfo@]host[:port]/path[?query][#fragment]` becomes
      `scheme://host[:port]/path`; everything else keeps git's spelling.
    - SCP-style `[userinfo@]host:path` becomes `host:path` (git's SCP form, its own user).
    - An `@` after the host is ambiguous (a credential with an unescaped `/`, `?`, `#` or
      `@` looks the same), so such a remote is omitted rather than guessed at.
    - Local paths (absolute, relative, `file://`, `C:\\`), remote-helper forms
      (`transport::address`) and anything else opaque or malformed give None.
    """
    if not url or url != url.strip() or _CONTROL.search(url):
        return None
    if _HELPER_FORM.match(url):
        return None
    standard = _URL_FORM.fullmatch(url)
    if standard is not None:
        return _sanitize_standard_url(standard["scheme"], standard["rest"])
    return _sanitize_scp_form(url)


def _sanitize_standard_url(scheme: str, rest: str) -> str | None:
    if scheme.lower() == "file":
        return None
    authority_end = next((i for i, char in enumerate(rest) if char in "/?#"), len(rest))
    authority, remainder = rest[:authority_end], rest[authority_end:]
    if "@" in remainder:
        return None
    host = _host_without_userinfo(authority)
    if host is None or not _valid_host_and_port(host):
        return None
    return f"{scheme}://{host}{_QUERY_OR_FRAGMENT.split(remainder, 1)[0]}"


def _host_without_userinfo(authority: str) -> str | None:
    """`host[:port]` of `[userinfo@]host[:port]`; git also takes `[userinfo@host]:port`."""
    bracket = authority.find("[")
    if bracket == -1:
        return authority.rpartition("@")[2]
    userinfo, bracketed = authority[:bracket], authority[bracket:]
    closing = bracketed.find("]")
    if (userinfo and not userinfo.endswith("@")) or closing == -1:
        return None
    return "[" + bracketed[1:closing].rpartition("@")[2] + bracketed[closing:]


def _valid_host_and_port(authority: str) -> bool:
    if authority.startswith("["):
        closing = authority.find("]")
        if closing <= 1:
            return False
        port = authority[closing + 1 :]
        return port == "" or (port.startswith(":") and bool(_PORT.fullmatch(port[1:])))
    host, _, port = authority.partition(":")
    return bool(host) and bool(_PORT.fullmatch(port))


def _sanitize_scp_form(url: str) -> str | None:
    # Git's rule: a colon with no slash before it is SCP-style, otherwise a local path.
    colon, slash = url.find(":"), url.find("/")
    if colon == -1 or 0 <= slash < colon or _DOS_DRIVE.match(url):
        return None
    match = _SCP_FORM.fullmatch(url)
    if match is None:
        return None
    host = f"[{match['inner']}]" if match["inner"] is not None else match["host"]
    path = _QUERY_OR_FRAGMENT.split(match["path"], 1)[0]
    return f"{host}:{path}" if path else None

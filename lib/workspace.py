"""The Workspace: what one run of agentctl works in, opened once and shared.

It resolves, lazily and each at most once, the configuration, the state directory,
the user's identity, the store and its space, and the Fabric target; it creates
drivers for configured sources and describes them without starting them. The command
line, the host and the worker all open a Workspace; none of them repeats these rules.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from lib.config import Config, builtin_source_homes, default_config_path, load_config
from lib.drivers.base import AgentDriver, DriverUnavailable
from lib.drivers.registry import create_driver, describe_source
from lib.errors import CodedError, ExitCode, UsageError
from lib.fabric.identity import DID_FORM, Identity, is_did, load_or_create_identity
from lib.fabric.private_paths import ensure_private_directory
from lib.fabric.publish_lock import describe_holder
from lib.fabric.session_reader import SessionReader
from lib.fabric.store import open_store
from lib.fabric.store_url import is_memory_url, resolve_store_url, sqlite_path
from lib.fabric.target import FabricTarget, PublishedSession, TargetError
from lib.git_context import GitContextResolver
from lib.types import AgentSourceConfig, SourceDescriptor, normalize_source_id


def default_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/agentctl`, else `~/.local/state/agentctl` (a relative
    XDG_STATE_HOME is ignored, as the XDG specification says)."""
    base = (os.environ if environ is None else environ).get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "agentctl"


def working_directory() -> Path:
    """The directory relative paths are resolved against, read once."""
    try:
        return Path(os.getcwd())
    except OSError as exc:
        raise UsageError(
            "no-working-directory",
            f"the working directory cannot be read ({exc.strerror}); cd to a directory that exists",
        ) from None


def absolute_path(value: str | os.PathLike[str] | None, what: str, base: Path) -> Path | None:
    """`value` with `~` expanded and made absolute against `base` (None stays None)."""
    if value is None:
        return None
    text = os.fspath(value)
    if not text:
        raise UsageError("bad-path", f"the {what} is empty; give a path, or leave it out for the default")
    if "\0" in text:
        raise UsageError("bad-path", f"the {what} {text!r} holds a NUL character; give a path")
    return base / os.path.expanduser(text)


class Workspace:
    """Options left None take their defaults: the environment, then the configuration
    file, then the built-in values. Relative paths (and `sqlite:` URLs with a relative
    path) are resolved against the working directory once, here. `notify` receives
    messages for people (a publish lock being waited for); `notice` the lines saying
    what was done to make the state private (default: `notify`)."""

    def __init__(
        self,
        *,
        config_path: str | os.PathLike[str] | None = None,
        store_url: str | None = None,
        space: str | None = None,
        identity_path: str | os.PathLike[str] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        lock_timeout: float | None = None,
        notify: Callable[[str], None] | None = None,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        base = working_directory()
        self.config_path = absolute_path(config_path, "configuration file", base)
        self.identity_path = absolute_path(identity_path, "identity file", base)
        self.state_dir = absolute_path(state_dir, "state directory", base)
        self.store_url = self._store_url(store_url, base)
        if space is not None and not is_did(space):
            raise UsageError("bad-space", f"space {space!r} is not a DID ({DID_FORM}); give a DID, or leave "
                                          "it out to use your own")
        self.space = space
        self.lock_timeout = lock_timeout
        self._notify = notify or (lambda _message: None)
        self._notice = notice or self._notify
        self._config: Config | None = None
        self._identity: Identity | None = None
        self._target: FabricTarget | None = None
        self._state_checked = False

    @staticmethod
    def _store_url(url: str | None, base: Path) -> str | None:
        if url is None:
            return None
        if not url:
            raise UsageError("bad-store-url", "the store URL is empty; give one, like sqlite:///home/me/fabric.db")
        return resolve_store_url(url, base)

    # -- configuration and identity -------------------------------------------------------

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = load_config(self.config_path)
        return self._config

    @property
    def state_path(self) -> Path:
        return self.state_dir or default_state_dir()

    def private_state_path(self) -> Path:
        """The state directory, created mode 0700 or checked (once per run): refused when
        it is a symlink, not a directory or another user's; tightened when loose."""
        path = self.state_path
        if not self._state_checked:
            fix = "agentctl keeps its state only in a real directory of your own: choose one with --state-dir or AGENTCTL_STATE_DIR"
            try:
                ensure_private_directory(path, what="state directory", fix=fix,
                                         code="unsafe-state-directory", notice=self._notice)
            except OSError as exc:
                raise UsageError("state-directory-uncreatable",
                                 f"cannot create state directory {path} ({exc.strerror}); {fix}") from None
            self._state_checked = True
        return path

    @property
    def identity(self) -> Identity:
        """The user's Ed25519 identity, created on first use in a private file."""
        if self._identity is None:
            self._identity = load_or_create_identity(self.identity_file())
        return self._identity

    def identity_file(self) -> Path:
        """Where the identity is kept: --identity, else `identity.json` in the state
        directory (which this creates private, or checks)."""
        return self.identity_path or self.private_state_path() / "identity.json"

    def clock(self) -> Callable[[], datetime] | None:
        """`AGENTCTL_CLOCK` (an ISO time) fixes the clock, for reproducible publications."""
        fixed = os.environ.get("AGENTCTL_CLOCK")
        if not fixed:
            return None
        try:
            moment = datetime.fromisoformat(fixed.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError("bad-clock", f"AGENTCTL_CLOCK is not an ISO time: {fixed!r}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return lambda: moment

    def git_resolver(self) -> GitContextResolver:
        clock = self.clock()
        return GitContextResolver(clock=clock) if clock else GitContextResolver()

    # -- the store and the target -----------------------------------------------------------

    @property
    def resolved_store_url(self) -> str:
        url = self.store_url or self.config.store or self._default_store_url()
        if is_memory_url(url):
            raise UsageError(
                "store-in-memory",
                f"{url} is a store that vanishes when agentctl exits, so nothing written to it "
                "would be kept; give a file, like sqlite:///home/me/fabric.db",
            )
        return url

    def _default_store_url(self) -> str:
        return f"sqlite://{self.state_path / 'fabric.sqlite3'}"

    @property
    def space_did(self) -> str:
        """The space to publish into: --space, the configuration, else the user's own DID."""
        return self.space or self.config.space or self.identity.did

    def store_exists(self) -> bool:
        path = sqlite_path(self.resolved_store_url)
        return path is None or Path(path).exists()

    def open_target(self, *, read_only: bool = False) -> FabricTarget:
        """The Fabric target for the store and space, owned by the user's identity.

        A read-only target never writes and never waits for a writer (`sessions`,
        `show`); once a writable one is open, it serves readers too."""
        if self._target is not None and (read_only or not self._target.read_only):
            return self._target
        url = self.resolved_store_url
        if url == self._default_store_url():
            self.private_state_path()
        store = open_store(url, notice=self._notice)  # a bad URL is a usage error (StoreUrlError)
        try:
            target = FabricTarget.open(
                store,
                space=self.space_did,
                owner=self.identity.did,
                read_only=read_only,
                clock=self.clock(),
                resolver=self.git_resolver(),
                on_lock_wait=self._lock_wait,
                **({"lock_timeout": self.lock_timeout} if self.lock_timeout is not None else {}),
            )
        except TargetError as exc:
            store.close()
            raise TargetError(exc.code, f"{exc.message} ({url}, space {self.space_did})") from None
        except BaseException:
            store.close()
            raise
        self.close()
        self._target = target
        return target

    def session_reader(self) -> SessionReader:
        """Reads what was published, without writing to the store or waiting for a writer."""
        target = self.open_target(read_only=True)
        return SessionReader(target.store, target.space, target.owner)

    def published_sessions(self) -> dict[str, PublishedSession]:
        """What the target has published; empty (and nothing created) when no store exists."""
        if not self.store_exists():
            return {}
        return self.open_target(read_only=True).published_sessions()

    def _lock_wait(self, holder: dict | None) -> None:
        self._notify(f"agentctl: waiting for the publish lock ({describe_holder(holder)})")

    def close(self) -> None:
        if self._target is not None:
            self._target.store.close()
            self._target = None

    # -- sources ------------------------------------------------------------------------------

    def source_config(self, source_id: str) -> AgentSourceConfig:
        source = self.config.source(source_id)
        if source is None:
            known = ", ".join(normalize_source_id(s.id) for s in self.config.sources) or "none"
            raise UsageError(
                "unknown-source",
                f"unknown source {normalize_source_id(source_id)!r}; configured sources: {known}",
            )
        return source

    def create_driver(self, source_id: str) -> AgentDriver:
        config = self.source_config(source_id)
        if config.cwd is not None and not os.path.isdir(config.cwd):
            # checked here: a child started in a missing directory reads as a missing program
            where = f"[sources.{config.id}] in {self.config.path or 'the configuration'}"
            raise SourceDirectoryMissing(
                "source-cwd-missing",
                f"'cwd' {config.cwd} ({where}) is not a directory; create it or change 'cwd'",
            )
        driver = create_driver(config)
        driver.state_directory = self.private_state_path  # called only by a driver that keeps state
        return driver

    def collection_driver(self, source_id: str) -> AgentDriver:
        """`create_driver`'s driver, started only to list and read: no prompt runs on it
        (AgentDriver.collection_only). For sync, list, read, prepare and publish."""
        driver = self.create_driver(source_id)
        driver.collection_only = True
        return driver

    def describe_source(self, source_id: str) -> SourceDescriptor:
        """A configured source's descriptor, without creating its driver."""
        config = self.config.source(source_id)
        if config is None:
            raise UnknownSourceInRecords(
                "unknown-source",
                f"records name source {source_id!r}, which is not configured; "
                f"add it to {self.config.path or 'the configuration'}",
            )
        return describe_source(config)

    def driver_kind(self, source_id: str) -> str:
        return self.source_config(source_id).driver

    def sync_sources(self, names: tuple[str, ...] | list[str] = ()) -> list[str]:
        """The sources a sync collects, by normalized id, each once: those named (in any
        spelling), else the enabled configured ones; with no configuration file, the
        built-in sources whose homes exist here."""
        if names:
            return list(dict.fromkeys(normalize_source_id(self.source_config(name).id) for name in names))
        if self.config.from_file:
            found = [normalize_source_id(s.id) for s in self.config.enabled_sources()]
            if not found:
                raise UsageError(
                    "no-sources",
                    f"no enabled sources in {self.config.path}; enable one or name it: agentctl sync SOURCE",
                )
            return found
        homes = builtin_source_homes()
        found = [s.id for s in self.config.sources if s.id in homes and homes[s.id].is_dir()]
        if not found:
            looked = ", ".join(str(p) for p in homes.values())
            raise UsageError(
                "no-sources",
                f"no agent homes found (looked for {looked}); name a source or configure one "
                f"in {default_config_path()}",
            )
        return found


class SourceDirectoryMissing(DriverUnavailable):
    """A source's `cwd` is not a directory: the configuration must change (exit 2); in a
    sync, that source is reported and the others go on, like any source that cannot start."""

    exit_code = ExitCode.USAGE


class UnknownSourceInRecords(CodedError, ValueError):
    """Records name a source the configuration does not have (an error record, not a stop)."""

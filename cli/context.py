"""Resolves configuration, state directory and drivers for one command invocation."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from cli.errors import EXIT_FAILURE, EXIT_LOCKED, EXIT_USAGE, CliError
from lib.config import Config, ConfigError, builtin_source_homes, default_config_path, load_config
from lib.drivers.base import AgentDriver, DriverError
from lib.drivers.registry import create_driver
from lib.fabric.identity import Identity, IdentityError, load_or_create_identity
from lib.fabric.index_store import IndexConflict
from lib.fabric.publish_lock import PublishLockHeld, describe_holder
from lib.fabric.session_reader import SessionReader
from lib.fabric.store import StoreError, open_store
from lib.fabric.target import FabricTarget, PublishedSession, TargetError
from lib.git_context import GitContextResolver
from lib.types import AgentSourceConfig, SourceDescriptor, normalize_source_id

T = TypeVar("T")


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser() / "agentctl"


@dataclass
class AppContext:
    config_path: str | None = None
    store_url: str | None = None
    space: str | None = None
    identity_path: str | None = None
    state_dir: str | None = None
    verbose: int = 0
    quiet: bool = False
    lock_timeout: float | None = None
    _config: Config | None = field(default=None, repr=False)
    _identity: Identity | None = field(default=None, repr=False)
    _target: FabricTarget | None = field(default=None, repr=False)

    @property
    def config(self) -> Config:
        if self._config is None:
            try:
                self._config = load_config(Path(self.config_path) if self.config_path else None)
            except ConfigError as exc:
                raise CliError(str(exc), EXIT_USAGE) from None
        return self._config

    @property
    def state_path(self) -> Path:
        return Path(self.state_dir).expanduser() if self.state_dir else default_state_dir()

    @property
    def identity(self) -> Identity:
        """The user's Ed25519 identity, created on first use in a private file."""
        if self._identity is None:
            path = Path(self.identity_path).expanduser() if self.identity_path else self.state_path / "identity.json"
            try:
                self._identity = load_or_create_identity(path)
            except IdentityError as exc:
                raise CliError(str(exc), EXIT_USAGE) from None
        return self._identity

    @property
    def resolved_store_url(self) -> str:
        url = self.store_url or self.config.store
        return url or f"sqlite:///{self.state_path / 'fabric.sqlite3'}"

    @property
    def space_did(self) -> str:
        """The space to publish into: --space, the configuration, else the user's own DID."""
        return self.space or self.config.space or self.identity.did

    def clock(self) -> Callable[[], datetime] | None:
        """`AGENTCTL_CLOCK` (an ISO time) fixes the clock, for reproducible publications."""
        fixed = os.environ.get("AGENTCTL_CLOCK")
        if not fixed:
            return None
        try:
            moment = datetime.fromisoformat(fixed.replace("Z", "+00:00"))
        except ValueError:
            raise CliError(f"AGENTCTL_CLOCK is not an ISO time: {fixed!r}", EXIT_USAGE) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return lambda: moment

    def git_resolver(self) -> GitContextResolver:
        clock = self.clock()
        return GitContextResolver(clock=clock) if clock else GitContextResolver()

    def store_exists(self) -> bool:
        url = self.resolved_store_url
        return not url.startswith("sqlite:///") or Path(url[len("sqlite://"):]).exists()

    def open_target(self) -> FabricTarget:
        """The Fabric target for --store and --space, owned by the user's identity."""
        if self._target is None:
            url = self.resolved_store_url
            try:
                store = open_store(url)
            except StoreError as exc:
                raise CliError(str(exc), EXIT_USAGE) from None
            clock = self.clock()
            try:
                self._target = FabricTarget.open(
                    store,
                    space=self.space_did,
                    owner=self.identity.did,
                    store_url=url,
                    clock=clock,
                    resolver=GitContextResolver(clock=clock) if clock else None,
                    on_lock_wait=self._lock_wait_message,
                    **({"lock_timeout": self.lock_timeout} if self.lock_timeout is not None else {}),
                )
            except TargetError as exc:
                raise CliError(f"{exc.message} ({url}, space {self.space_did})") from None
        return self._target

    def session_reader(self) -> SessionReader:
        target = self.open_target()
        return SessionReader(target.store, target.space, target.owner)

    def published_sessions(self) -> dict[str, PublishedSession]:
        """What the target has published; empty (and nothing created) when no store exists."""
        if not self.store_exists():
            return {}
        return self.open_target().published_sessions()

    def _lock_wait_message(self, holder: dict | None) -> None:
        self.say(f"agentctl: waiting for the publish lock ({describe_holder(holder)})")

    def close(self) -> None:
        if self._target is not None:
            self._target.store.close()
            self._target = None

    @contextmanager
    def locked_publication(self) -> Iterator[None]:
        """Turns a publish lock held past its timeout into exit 4 with the holder named,
        and a concurrent writer's index change into a one-line failure."""
        try:
            yield
        except PublishLockHeld as exc:
            raise CliError(exc.message, EXIT_LOCKED) from None
        except IndexConflict as exc:
            raise CliError(f"{exc}; nothing was published, run it again", EXIT_FAILURE) from None

    def descriptor_of(self, source_id: str) -> SourceDescriptor:
        """A configured source's descriptor, without starting its driver."""
        config = self.config.source(source_id)
        if config is None:
            raise ValueError(f"records name source {source_id!r}, which is not configured; add it to {self.config.path or 'the configuration'}")
        try:
            return create_driver(config).source
        except DriverError:
            return SourceDescriptor(id=normalize_source_id(config.id), driver=config.driver)

    def default_sync_sources(self) -> list[str]:
        """Enabled configured sources; with no configuration file, the built-in sources
        whose homes exist on this machine."""
        if self.config.from_file:
            return [normalize_source_id(s.id) for s in self.config.enabled_sources()]
        homes = builtin_source_homes()
        return [s.id for s in self.config.sources if s.id in homes and homes[s.id].is_dir()]

    def no_sources_message(self) -> str:
        if self.config.from_file:
            return f"no enabled sources in {self.config.path}; enable one or name it: agentctl sync SOURCE"
        looked = ", ".join(str(p) for p in builtin_source_homes().values())
        return f"no agent homes found (looked for {looked}); name a source or configure one in {default_config_path()}"

    def source_config(self, source_id: str) -> AgentSourceConfig:
        source = self.config.source(source_id)
        if source is None:
            known = ", ".join(normalize_source_id(s.id) for s in self.config.sources) or "none"
            raise CliError(
                f"unknown source {normalize_source_id(source_id)!r}; configured sources: {known}",
                EXIT_USAGE,
            )
        return source

    def create_driver(self, source_id: str) -> AgentDriver:
        return create_driver(self.source_config(source_id))

    def progress(self, iterable: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
        """A tqdm bar on stderr, only when stderr is a terminal and not --quiet."""
        if self.quiet or not sys.stderr.isatty():
            yield from iterable
            return
        from tqdm import tqdm

        with tqdm(iterable, desc=description, total=total, unit="session", file=sys.stderr, leave=False) as bar:
            yield from bar

    def say(self, message: str) -> None:
        if not self.quiet:
            print(message, file=sys.stderr)

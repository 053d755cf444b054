"""Resolves configuration, state directory and drivers for one command invocation."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from cli.errors import EXIT_USAGE, CliError
from lib.config import Config, ConfigError, load_config
from lib.drivers.base import AgentDriver
from lib.drivers.registry import create_driver
from lib.fabric.identity import Identity, IdentityError, load_or_create_identity
from lib.types import AgentSourceConfig, normalize_source_id

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
    _config: Config | None = field(default=None, repr=False)
    _identity: Identity | None = field(default=None, repr=False)

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

"""Strict TOML configuration.

The file lives at `$AGENTCTL_CONFIG`, else `$XDG_CONFIG_HOME/agentctl/config.toml`, else
`~/.config/agentctl/config.toml`. Unknown keys are errors naming the key and the file, so
a typo never silently changes what is synced. With no file at all the built-in sources
`codex` and `claude` exist with their defaults.

    store = "sqlite:///home/me/agentctl.sqlite3"   # optional
    space = "did:key:z6Mk..."                       # optional
    checkoutRoots = ["~/src", "/work"]              # optional: checkout discovery

    [sources.codex]
    driver = "codex-app-server"
    codexHome = "~/.codex"

    [sources.work]
    driver = "acp"
    command = ["my-agent", "--acp"]
    enabled = false

    [producers.ci]                                  # a command queue of its own
    writer = "did:key:z6Mk..."                      # the one identity that may write it
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lib.errors import UsageError
from lib.fabric.identity import DID_FORM, is_did
from lib.fabric.store_errors import StoreUrlError
from lib.fabric.store_url import check_store_url, resolve_store_url
from lib.types import AgentSourceConfig, normalize_source_id

TOP_LEVEL_KEYS = frozenset({"store", "space", "sources", "producers", "checkoutRoots"})
MAX_PRODUCER_NAME = 256
PATH_FIELDS = ("cwd", "config_dir", "codex_bin", "codex_home", "codex_socket")  # `~` is expanded
MAX_CONFIG_BYTES = 1024 * 1024
SOURCE_KEYS = frozenset(AgentSourceConfig.model_fields[name].alias or name for name in AgentSourceConfig.model_fields) - {"id"}


class ConfigError(UsageError):
    """A configuration file that cannot be used. The message names the file and the fix."""

    def __init__(self, message: str) -> None:
        super().__init__("bad-config", message)


@dataclass(frozen=True)
class Config:
    path: Path | None
    sources: tuple[AgentSourceConfig, ...]
    store: str | None = None
    space: str | None = None
    from_file: bool = False
    producers: Mapping[str, str] = field(default_factory=dict)  # producer name -> writer DID
    # Where checkouts are discovered (lib/checkout_discovery.py); empty: no discovery,
    # so publications keep the prior discovery rows.
    checkout_roots: tuple[Path, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def source(self, source_id: str) -> AgentSourceConfig | None:
        wanted = normalize_source_id(source_id)
        for source in self.sources:
            if normalize_source_id(source.id) == wanted:
                return source
        return None

    def enabled_sources(self) -> list[AgentSourceConfig]:
        return [source for source in self.sources if source.enabled]


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """`$AGENTCTL_CONFIG` (relative to the working directory), else
    `$XDG_CONFIG_HOME/agentctl/config.toml` (a relative XDG_CONFIG_HOME is ignored, as the
    XDG specification says), else `~/.config/agentctl/config.toml`."""
    env = os.environ if environ is None else environ
    if env.get("AGENTCTL_CONFIG"):
        return Path(os.path.abspath(os.path.expanduser(env["AGENTCTL_CONFIG"])))
    base = env.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "agentctl" / "config.toml"


def builtin_sources() -> tuple[AgentSourceConfig, ...]:
    """The sources that exist when there is no configuration file."""
    return (
        AgentSourceConfig(id="codex", driver="codex-app-server"),
        AgentSourceConfig(id="claude", driver="claude-agent-sdk"),
    )


def builtin_source_homes(environ: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Where the built-in sources keep their sessions: `sync` without configuration
    collects a built-in source only when its home exists."""
    env = os.environ if environ is None else environ
    return {
        "codex": Path(env.get("CODEX_HOME") or Path.home() / ".codex").expanduser(),
        "claude": Path(env.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser(),
    }


def load_config(path: Path | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Read the configuration; a missing file (at the default path) means the built-ins."""
    explicit = path is not None or bool((os.environ if environ is None else environ).get("AGENTCTL_CONFIG"))
    config_path = path if path is not None else default_config_path(environ)
    if not config_path.exists():
        if explicit:
            raise ConfigError(f"{config_path}: configuration file not found; create it or unset AGENTCTL_CONFIG")
        return Config(path=None, sources=builtin_sources())
    try:
        with open(config_path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{config_path}: cannot read the configuration file ({exc.strerror})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{config_path}: the configuration file is larger than {MAX_CONFIG_BYTES // 1024} KiB; "
                          "is it the right file?")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{config_path}: not UTF-8 (byte {exc.start}); TOML files are UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{config_path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{config_path}: not valid TOML here: arrays or tables nested too deeply") from None
    return parse_config(data, config_path)


def parse_config(data: Mapping[str, Any], path: Path) -> Config:
    unknown = sorted(set(data) - TOP_LEVEL_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(TOP_LEVEL_KEYS))})")
    nul = _key_holding_nul(data)
    if nul is not None:
        raise ConfigError(f"{path}: {nul!r}: a NUL character is not allowed in the configuration")
    for key in ("store", "space"):
        if key in data and not isinstance(data[key], str):
            raise ConfigError(f"{path}: {key!r} must be a string (got {_kind(data[key])})")
    store = data.get("store")
    if store is not None:
        try:
            check_store_url(store)
            store = resolve_store_url(store, None)
        except StoreUrlError as exc:
            raise ConfigError(f"{path}: 'store': {exc.message}") from None
    space = data.get("space")
    if space is not None and not is_did(space):
        raise ConfigError(f"{path}: 'space': {space!r} is not a DID ({DID_FORM})")
    raw_sources = data.get("sources", {})
    if not isinstance(raw_sources, dict):
        raise ConfigError(f"{path}: 'sources' must be a table of [sources.<id>] tables (got {_kind(raw_sources)})")
    sources = [_parse_source(source_id, table, path) for source_id, table in raw_sources.items()]
    check_unique_source_ids(sources, path)
    producers = _parse_producers(data.get("producers", {}), path)
    checkout_roots = _parse_checkout_roots(data.get("checkoutRoots", []), path)
    return Config(path=path, sources=tuple(sources), store=store, space=space, from_file=True,
                  producers=producers, checkout_roots=checkout_roots)


def _parse_checkout_roots(raw: Any, path: Path) -> tuple[Path, ...]:
    """`checkoutRoots = ["~/src", "/work"]`: directories below which every sync scans for
    checkouts. Each is a non-empty string, absolute once `~` is expanded; duplicates
    are kept once, in the order given."""
    where = f"{path}: 'checkoutRoots'"
    if not isinstance(raw, list):
        raise ConfigError(f"{where} must be an array of directory paths (got {_kind(raw)})")
    roots: list[Path] = []
    for index, item in enumerate(raw):
        if not isinstance(item, str):
            raise ConfigError(f"{where}[{index}] must be a string (got {_kind(item)})")
        if not item.strip():
            raise ConfigError(f"{where}[{index}] is empty; give a directory path or remove it")
        expanded = os.path.expanduser(item)
        if not os.path.isabs(expanded):
            raise ConfigError(f"{where}[{index}] {item!r} is not an absolute path; "
                              "give one starting with / or ~ (the file is read from anywhere)")
        root = Path(os.path.normpath(expanded))
        if root not in roots:
            roots.append(root)
    return tuple(roots)


def _parse_producers(raw: Any, path: Path) -> dict[str, str]:
    """`[producers.NAME] writer = DID`: each producer gets a command queue of its own that
    only its writer may write to."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: 'producers' must be a table of [producers.<name>] tables (got {_kind(raw)})")
    producers: dict[str, str] = {}
    for name, table in raw.items():
        where = f"{path}: [producers.{name}]"
        if not name.strip() or len(name) > MAX_PRODUCER_NAME or any(ord(c) < 32 for c in name):
            raise ConfigError(f"{where}: a producer name is 1 to {MAX_PRODUCER_NAME} printable characters")
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: must be a table with a 'writer' DID (got {_kind(table)})")
        unknown = sorted(set(table) - {"writer"})
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: writer)")
        writer = table.get("writer")
        if not isinstance(writer, str) or not is_did(writer):
            raise ConfigError(f"{where}: 'writer' must be the DID of the identity that sends its commands ({DID_FORM})")
        producers[name] = writer
    return producers


def _key_holding_nul(value: Any, where: str = "") -> str | None:
    """The dotted key of the first key or string holding a NUL character (a path or an
    argument no program can be given), else None."""
    if isinstance(value, str):
        return where if "\0" in value else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        inner = f"{where}.{key}" if where else str(key)
        if "\0" in str(key):
            return inner
        found = _key_holding_nul(item, inner)
        if found is not None:
            return found
    return None


def _kind(value: Any) -> str:
    """A TOML value's type, as the configuration's messages name it."""
    kinds = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
             (list, "an array"), (dict, "a table"))
    for kind, name in kinds:
        if isinstance(value, kind):
            return name
    return "a date or time"


def check_unique_source_ids(configs: Iterable[AgentSourceConfig], path: Path | str = "configuration") -> None:
    """Reject configurations whose ids are empty or collide once trimmed and lowercased."""
    seen: dict[str, str] = {}
    for config in configs:
        key = normalize_source_id(config.id)
        if not key:
            raise ConfigError(f"{path}: a source id must not be empty")
        if any(ch < " " or "\x7f" <= ch <= "\x9f" for ch in key):
            raise ConfigError(f"{path}: source id {config.id!r} holds a control character; give it another id")
        if key in seen:
            raise ConfigError(
                f"{path}: source ids {seen[key]!r} and {config.id!r} are the same once trimmed "
                f"and lowercased ({key!r}); give one of them another id"
            )
        seen[key] = config.id


def _parse_source(source_id: str, table: Any, path: Path) -> AgentSourceConfig:
    # an id with a control character is refused later (check_unique_source_ids); until
    # then it is shown escaped, so every message stays one line
    where = f"{path}: [sources.{source_id if source_id.isprintable() else repr(source_id)}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - SOURCE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(SOURCE_KEYS))})")
    if "driver" not in table:
        raise ConfigError(f"{where}: 'driver' is required (codex-app-server, claude-agent-sdk or acp)")
    try:
        source = AgentSourceConfig.model_validate({"id": source_id, **table})
    except ValidationError as exc:
        first = exc.errors()[0]
        field_name = ".".join(str(part) for part in first["loc"]) or "source"
        given = first.get("input")
        got = ""
        if first["type"].endswith("_type") or (first["type"] == "literal_error" and not isinstance(given, str)):
            got = f" (got {_kind(given)})"
        elif first["type"] == "literal_error":
            got = f" (got {given!r})"
        raise ConfigError(f"{where}: {field_name}: {first['msg']}{got}") from None
    source = source.model_copy(update={
        name: os.path.expanduser(value) for name in PATH_FIELDS if isinstance(value := getattr(source, name), str)
    })
    if source.driver == "acp" and not source.command:
        # An ACP agent is whatever program the user runs: there is no default to derive.
        raise ConfigError(f"{where}: an acp source needs 'command', the agent program and its "
                          f'arguments (e.g. command = ["my-agent", "--acp"])')
    return source

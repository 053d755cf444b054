"""Picks a driver class by name without importing the other drivers."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from lib.drivers.base import AgentDriver, DriverUnavailable
from lib.types import AgentSourceConfig, normalize_source_id

# driver kind -> (module, class). Modules are imported only when that driver is created,
# so a host that uses Codex never imports an SDK it does not have.
DRIVER_CLASSES: dict[str, tuple[str, str]] = {
    "codex-app-server": ("lib.drivers.codex_app_server", "CodexAppServerDriver"),
    "claude-agent-sdk": ("lib.drivers.claude_agent_sdk", "ClaudeAgentSdkDriver"),
    "acp": ("lib.drivers.acp", "AcpDriver"),
}


class DuplicateSourceError(ValueError):
    pass


def create_driver(config: AgentSourceConfig) -> AgentDriver:
    """Create (not start) the driver `config.driver` names."""
    try:
        module_name, class_name = DRIVER_CLASSES[config.driver]
    except KeyError:
        raise DriverUnavailable(
            "unknown-driver", f"unknown driver {config.driver!r} for source {config.id}"
        ) from None
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise DriverUnavailable(
            "driver-not-available",
            f"the {config.driver} driver is not available in this version of agentctl "
            f"(source {normalize_source_id(config.id)})",
        ) from None
    driver_class: type[AgentDriver] = getattr(module, class_name)
    return driver_class(config)


def check_unique_source_ids(configs: Iterable[AgentSourceConfig]) -> None:
    """Reject configurations whose ids collide once trimmed and lowercased."""
    seen: dict[str, str] = {}
    for config in configs:
        key = normalize_source_id(config.id)
        if not key:
            raise DuplicateSourceError("a source id must not be empty")
        if key in seen:
            raise DuplicateSourceError(
                f"source ids {seen[key]!r} and {config.id!r} are the same once trimmed and "
                f"lowercased ({key!r}); give one of them another id"
            )
        seen[key] = config.id

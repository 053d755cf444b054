"""Picks a driver class by name without importing the other drivers."""

from __future__ import annotations

import importlib

from lib.drivers.base import (
    AgentDriver,
    DriverNotInstalled,
    DriverUnavailable,
    InventoryFingerprint,
)
from lib.types import AgentSourceConfig, SourceDescriptor, normalize_source_id

# driver kind -> (module, class). Modules are imported only when that driver is created,
# so a host that uses Codex never imports an SDK it does not have.
DRIVER_CLASSES: dict[str, tuple[str, str]] = {
    "codex-app-server": ("lib.drivers.codex_app_server", "CodexAppServerDriver"),
    "claude-agent-sdk": ("lib.drivers.claude_agent_sdk", "ClaudeAgentSdkDriver"),
    "acp": ("lib.drivers.acp", "AcpDriver"),
}


# driver kind -> the module whose `inventory_fingerprint(config)` a driver class delegates
# to: taken before every sync, so it must not import the provider's transport.
FINGERPRINT_MODULES: dict[str, str] = {
    "codex-app-server": "lib.drivers.codex_fingerprint",
}


def inventory_fingerprint(config: AgentSourceConfig) -> InventoryFingerprint | None:
    """The driver's `inventory_fingerprint(config)`, through its light module when it has
    one (the same function its class method calls), else through the class."""
    module_name = FINGERPRINT_MODULES.get(config.driver)
    if module_name is not None:
        return importlib.import_module(module_name).inventory_fingerprint(config)
    return driver_class(config).inventory_fingerprint(config)


def create_driver(config: AgentSourceConfig) -> AgentDriver:
    """Create (not start) the driver `config.driver` names."""
    return driver_class(config)(config)


def describe_source(config: AgentSourceConfig) -> SourceDescriptor:
    """A source's descriptor without creating its driver; an unknown or unavailable
    driver gives the descriptor with no capabilities."""
    try:
        return driver_class(config).describe(config)
    except DriverUnavailable:
        return SourceDescriptor(id=normalize_source_id(config.id), driver=config.driver)


def driver_class(config: AgentSourceConfig) -> type[AgentDriver]:
    """The class serving `config.driver`, importing only its module; DriverNotInstalled
    (a usage error) when this agentctl does not have it."""
    source_id = normalize_source_id(config.id)
    try:
        module_name, class_name = DRIVER_CLASSES[config.driver]
    except KeyError:
        raise DriverNotInstalled(
            "unknown-driver",
            f"source {source_id} names the unknown driver {config.driver!r}; "
            f"use one of {', '.join(DRIVER_CLASSES)}",
        ) from None
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise DriverNotInstalled(
            "driver-not-available",
            f"source {source_id} uses the {config.driver} driver, which this version of agentctl "
            f"does not have; disable the source (enabled = false) or install an agentctl that has it",
        ) from None
    return getattr(module, class_name)

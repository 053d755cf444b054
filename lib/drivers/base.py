"""The driver boundary every provider implements.

Every driver has every method. What a provider cannot do returns an `unsupported`
result with a structured error instead of raising, so hosts never special-case a
driver by its class.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lib.errors import CodedError, ExitCode
from lib.types import (
    AgentSourceConfig,
    CommandExecutionOptions,
    CommandExecutionResult,
    DriverCapabilities,
    NativeSessionSnapshot,
    PromptInput,
    SessionPage,
    SourceDescriptor,
    StartInput,
    normalize_source_id,
)


class DriverError(CodedError):
    """A provider call that failed. `code` is stable; `message` is for people and is
    always agentctl's own words.

    `detail` is what the provider itself wrote (the bounded tail of its stderr, a line it
    sent that was no message): it can hold anything, a key or transcript text included, so
    it is never part of `message`, of a record or of the store. It is there for a person
    who asks (`agentctl -v`, see `child_channels.report_provider_output`).
    """

    def __init__(
        self, code: str, message: str, *, retryable: bool = False, detail: str | None = None
    ) -> None:
        super().__init__(code, message)
        self.retryable = retryable
        self.detail = detail


class DriverUnavailable(DriverError):
    """The driver cannot start here: its program is missing or cannot run. A failure
    (exit 1): the configuration may be right and this machine not ready yet."""


class DriverNotInstalled(DriverUnavailable):
    """The source names a driver this agentctl does not have (unknown, or not built into
    this version): a usage error (exit 2), the user must change the configuration or
    install an agentctl that has the driver."""

    exit_code = ExitCode.USAGE


class Cancelled(DriverError):
    """A cancellation signal stopped the work at a provider call boundary."""

    def __init__(self, message: str = "cancelled") -> None:
        super().__init__("cancelled", message)


class CancelSignal:
    """A cancellation flag that work checks at provider call boundaries."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


@dataclass(frozen=True)
class InventoryFingerprint:
    """What a provider's inventory depends on, summed up without parsing it: a digest
    of the sizes, times and identities of the files its listing reads. An equal digest
    means nothing it lists can have changed (lib/pipeline/unchanged_sources.py).

    `newest_change_ns` is the latest modification or status-change time among those
    files and `taken_ns` the wall clock when they were looked at: a file changed just
    before `taken_ns` may change again within the same timestamp tick, so such a
    fingerprint is not trusted (see `settled`)."""

    digest: str
    files: int
    newest_change_ns: int
    taken_ns: int

    def settled(self, window_ns: int) -> bool:
        """No file changed within `window_ns` before the fingerprint was taken."""
        return self.newest_change_ns < self.taken_ns - window_ns


class AgentDriver(ABC):
    """Blocking provider boundary. Subclasses override what their provider supports."""

    driver_kind: str = ""
    # The workspace's private state directory (0700, checked; resolved only when called),
    # for a driver that keeps something between runs (ACP: learned session controls).
    # Set by the Workspace that creates the driver; None: nothing is kept.
    state_directory: Callable[[], Path] | None = None
    # Set by whoever starts this driver only to list and read (sync, list, read, prepare,
    # publish): no prompt will run on it, so its provider may run as collecting is
    # fastest (Codex: on one CPU, lib/drivers/one_cpu.py). Never set for commands.
    collection_only: bool = False

    def __init__(self, config: AgentSourceConfig) -> None:
        self.config = config
        self.source = self.describe(config)

    @classmethod
    def describe(cls, config: AgentSourceConfig) -> SourceDescriptor:
        """The descriptor of a source this driver class serves, before it starts (a
        driver may learn more capabilities once running)."""
        return SourceDescriptor(
            id=normalize_source_id(config.id),
            driver=config.driver,
            capabilities=cls.initial_capabilities(),
        )

    @classmethod

    def initial_capabilities(cls) -> DriverCapabilities:
        return DriverCapabilities()

    @classmethod
    def inventory_fingerprint(cls, config: AgentSourceConfig) -> InventoryFingerprint | None:
        """A fingerprint of what this source's inventory depends on, taken without
        starting the provider; None (the default) when the driver cannot tell, and then
        every sync lists through the provider."""
        return None

    @abstractmethod
    def start(self, signal: CancelSignal | None = None) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def list_sessions(self, cursor: str | None = None) -> SessionPage: ...

    def begin_list_sessions(self, cursor: str | None = None) -> Callable[[], SessionPage]:
        """Begin listing the page at `cursor`; the returned call takes it (or raises what
        `list_sessions` would). A driver whose provider answers a request while another
        is outstanding asks for the page at once, so a collection's next page is made
        while it works on this one (lib/reconcile.py); by default the page is listed
        when it is taken."""
        return lambda: self.list_sessions(cursor)

    @abstractmethod
    def read_session(self, native_session_id: str) -> NativeSessionSnapshot: ...

    def prompt(
        self,
        native_session_id: str,
        input: PromptInput,
        options: CommandExecutionOptions | None = None,
    ) -> CommandExecutionResult:
        return CommandExecutionResult.unsupported("prompt", self.source.id)

    def start_session(
        self,
        native_session_id: str,
        input: StartInput,
        options: CommandExecutionOptions | None = None,
    ) -> CommandExecutionResult:
        return CommandExecutionResult.unsupported("start", self.source.id)

    def cancel(self, native_session_id: str) -> CommandExecutionResult:
        return CommandExecutionResult.unsupported("cancel", self.source.id)

    def rename_session(self, native_session_id: str, title: str) -> CommandExecutionResult:
        return CommandExecutionResult.unsupported("rename", self.source.id)

    def set_mode(self, native_session_id: str, mode: str) -> CommandExecutionResult:
        return CommandExecutionResult.unsupported("set-mode", self.source.id)

    def set_config_option(
        self, native_session_id: str, key: str, value: Any
    ) -> CommandExecutionResult:
        return CommandExecutionResult.unsupported("set-config-option", self.source.id)

    def __enter__(self) -> AgentDriver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

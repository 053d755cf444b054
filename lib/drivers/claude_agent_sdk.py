"""The Claude driver: sessions, prompts and starts through the Claude Agent SDK.

Inventory and reads call the SDK's session functions through `ClaudeSdkAdapter`
(claude_sdk_adapter.py, which gives them the source's `configDir`); this module never
opens a session file. Pages of 100, the cursor is the decimal offset of the page's first
session in the SDK's listing (newest file first), served from one whole listing taken at
offset 0 (`ListingSnapshot`, claude_listing.py, says why). A source with `cwd` lists that project
directory and, inside a Git repository, its worktrees; never its subdirectories. Without
`cwd`, every project directory under `<configDir>/projects`.

Prompts and headless starts are SDK conversations on the driver's private event loop
(claude_loop.py, claude_prompts.py), each given an explicit environment: the source's
`env` and `CLAUDE_CONFIG_DIR`, never a change to ours. Desktop starts hand the prompt to
the Claude app and pair the session it makes later (claude_desktop.py); a driver makes
them instead of headless starts when it is given an opener.

`active` is true only for a session on which a prompt this driver started is running,
sampled when a list or read starts; otherwise null, never false (another process may be
using the conversation). Modes and models are kept in memory per session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from lib.drivers.base import AgentDriver, CancelSignal, DriverError, DriverUnavailable
from lib.drivers.child_channels import report_provider_output
from lib.drivers.claude_desktop import DesktopStarts, Opener
from lib.drivers.claude_listing import ListingSnapshot, parse_offset
from lib.drivers.claude_loop import ClaudeLoop
from lib.drivers.claude_options import (
    CONFIG_OPTIONS,
    MODES,
    config_dir_of,
    conversation_fields,
    is_uuid,
    modes_of,
    refused_option,
    start_directory,
    unsupported_mode,
)
from lib.drivers.claude_prompts import STOP_GRACE_SECONDS, ClaudePrompts, PendingPrompt
from lib.drivers.claude_sdk_adapter import CONFIG_DIR_VARIABLE, ClaudeSdkAdapter, provider_call
from lib.drivers.claude_sessions import (
    message_events,
    normalized_rows,
    snapshot,
    summaries,
    summary_fields,
)
from lib.types import (
    AgentSourceConfig,
    CommandExecutionOptions,
    CommandExecutionResult,
    DriverCapabilities,
    NativeSessionSnapshot,
    PromptInput,
    SessionPage,
    SessionSummary,
    SourceDescriptor,
    StartInput,
)

__all__ = ["CONFIG_DIR_VARIABLE", "PAGE_SIZE", "ClaudeAgentSdkDriver", "ClaudeSdkAdapter", "config_dir_of"]

PAGE_SIZE = 100
_T = TypeVar("_T")


class ClaudeAgentSdkDriver(AgentDriver):
    driver_kind = "claude-agent-sdk"

    def __init__(
        self,
        config: AgentSourceConfig,
        *,
        page_size: int = PAGE_SIZE,
        adapter: ClaudeSdkAdapter | None = None,
        desktop_opener: Opener | None = None,
    ) -> None:
        super().__init__(config)
        self.page_size = page_size
        self._adapter = adapter
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False
        self._loop = ClaudeLoop(f"claude driver loop (source {self.source.id})")
        self._prompts = ClaudePrompts(self.source.id, self._loop)
        # Sessions with a conversation of this driver running (`active` reads it).
        self._running = self._prompts.running
        self._desktop = DesktopStarts(desktop_opener) if desktop_opener is not None else None
        # Per session, in memory: the directory Claude keys it under, its mode, its model.
        self._directories: dict[str, str] = {}
        self._modes: dict[str, str] = {}
        self._models: dict[str, str] = {}
        self._listing = ListingSnapshot()

    @classmethod
    def initial_capabilities(cls) -> DriverCapabilities:
        return DriverCapabilities(
            list_sessions=True, read_session=True, prompt=True, cancel=True, rename_session=True,
            set_mode=True, set_config_option=True, start_session=True, modes=list(MODES),
            config_options=CONFIG_OPTIONS,
        )

    @classmethod
    def describe(cls, config: AgentSourceConfig) -> SourceDescriptor:
        descriptor = super().describe(config)
        descriptor.capabilities.modes = modes_of(config)
        return descriptor

    # -- lifecycle -------------------------------------------------------------------

    def start(self, signal: CancelSignal | None = None) -> None:
        if signal is not None:
            signal.raise_if_cancelled()
        command = self.config.command
        if command is not None and len(command) != 1:
            raise DriverUnavailable(
                "invalid-command",
                f"source {self.source.id}: a Claude source's command names the Claude Code CLI only "
                f"(one program, no arguments)")
        if self._adapter is None:
            self._adapter = ClaudeSdkAdapter(config_dir_of(self.config))
        self.source.provider_version = self._adapter.cli_version
        self._loop.start()
        with self._lock:
            self._started = True

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        self._prompts.stop()
        self._loop.stop(STOP_GRACE_SECONDS / 4)

    @property
    def adapter(self) -> ClaudeSdkAdapter:
        with self._lock:
            if self._stopped:
                raise DriverError("driver-stopped", f"the Claude driver of source {self.source.id} was stopped")
            if not self._started or self._adapter is None:
                raise DriverError("driver-not-started", f"the Claude driver of source {self.source.id} was not started")
            return self._adapter

    # -- inventory and reads ---------------------------------------------------------

    def list_sessions(self, cursor: str | None = None) -> SessionPage:
        offset = parse_offset(cursor)
        adapter = self.adapter
        owned = self._prompts.running_sessions()  # sampled before the call, as for a read
        # One more than a page says whether another page follows without an empty last page.
        infos = None if offset == 0 else self._listing.page(offset, self.page_size + 1)
        if infos is None:
            # The first page takes the whole listing (the SDK reads every file for any
            # page); a cursor the snapshot cannot serve asks the SDK for its page.
            limit = None if offset == 0 else self.page_size + 1
            infos = self._provider_call(
                "list_sessions",
                lambda: adapter.list_sessions(limit=limit, offset=offset, directory=self.config.cwd),
            )
            if offset == 0:
                self._listing.replace(infos)
                infos = infos[: self.page_size + 1]
        page = infos[: self.page_size]
        sessions = self._summaries(page, owned)
        self._listing.listed(sessions)
        more = len(infos) > self.page_size
        if not more:
            self._listing.finish()
        return SessionPage(sessions=sessions, next_cursor=str(offset + len(page)) if more else None)

    def read_session(self, native_session_id: str) -> NativeSessionSnapshot:
        adapter = self.adapter
        active = native_session_id in self._prompts.running_sessions()  # sampled when the read starts
        directory = self.config.cwd
        listed = self._listing.take_summary(native_session_id)
        if listed is None:
            summary = self._summary(self._session_info(native_session_id), active=active)
        elif listed.active == (True if active else None):
            # The listed summary itself: built and validated by this driver from the same
            # information, and no caller changes a summary in place (they copy to enrich).
            summary = listed
        else:
            summary = listed.model_copy(update={"active": True if active else None})
        messages = self._provider_call(
            "get_session_messages", lambda: adapter.get_session_messages(native_session_id, directory)
        )
        if not messages:
            # No messages: an empty session, or one deleted since it was listed. Only
            # the SDK's information says which.
            summary = self._summary(self._session_info(native_session_id), active=active)
        events = message_events(messages)
        return snapshot(summary, events, normalized_rows(events))  # validates the messages too

    def _session_info(self, native_session_id: str) -> Any:
        """The SDK's information about a session; `session-not-found` when it has none."""
        adapter, directory = self.adapter, self.config.cwd
        info = self._provider_call(
            "get_session_info", lambda: adapter.get_session_info(native_session_id, directory)
        )
        if info is None:
            where = f"in {directory} or its worktrees" if directory else "in any project"
            raise DriverError(
                "session-not-found", f"Claude has no session {native_session_id} {where} (source {self.source.id})"
            )
        return info

    def _summary(self, info: Any, *, active: bool):
        return self._summaries([info], {info.session_id} if active else set())[0]

    def _summaries(self, infos: list[Any], owned: set[str]) -> list[SessionSummary]:
        """The infos' summaries, validated as one list; each session's directory is noted
        for its prompts."""
        with self._lock:
            for info in infos:
                if isinstance(info.cwd, str) and info.cwd:
                    self._directories.setdefault(str(info.session_id), info.cwd)
        desktop = self._desktop
        return summaries([summary_fields(info, active=info.session_id in owned,
                                         started_as=desktop.started_as(info) if desktop is not None else None)
                          for info in infos])

    # -- commands --------------------------------------------------------------------

    def prompt(self, native_session_id: str, input: PromptInput,
               options: CommandExecutionOptions | None = None) -> CommandExecutionResult:
        options = options or CommandExecutionOptions()
        admitted = self._admit(native_session_id)
        if isinstance(admitted, CommandExecutionResult):
            return admitted
        try:
            if options.on_cancellation_ready is not None:
                options.on_cancellation_ready()
            with self._lock:
                directory = self._directories.get(native_session_id)
            if directory is None:
                found = self._lookup(admitted, native_session_id, self.config.cwd)
                if isinstance(found, CommandExecutionResult):
                    return found
                if found is None:
                    return CommandExecutionResult.failure(
                        "failed", "session-not-found",
                        f"Claude has no session {native_session_id} for source {self.source.id}")
                directory = found.cwd if isinstance(found.cwd, str) and found.cwd else self.config.cwd
                if directory is None:
                    return CommandExecutionResult.failure(
                        "failed", "no-directory",
                        f"session {native_session_id} records no directory and source {self.source.id} has no cwd")
            fields = self._fields(native_session_id, directory, mode=self._mode(native_session_id))
            fields["resume"] = native_session_id
            return self._prompts.run(admitted, self._adapter, fields, input.text, options.on_session_active)
        finally:
            self._prompts.release(admitted)

    def start_session(self, native_session_id: str, input: StartInput,
                      options: CommandExecutionOptions | None = None) -> CommandExecutionResult:
        options = options or CommandExecutionOptions()
        if not is_uuid(native_session_id):
            return CommandExecutionResult.failure(
                "failed", "invalid-session-id",
                f"a Claude session id must be a lowercase UUID, not {native_session_id!r}")
        directory = start_directory(self.config, self.source.id, input.cwd)
        if isinstance(directory, CommandExecutionResult):
            return directory
        if self._desktop is not None:
            return self._desktop_start(native_session_id, input, directory)
        if input.mode is not None and input.mode not in self.source.capabilities.modes:
            return self._unsupported_mode(input.mode)
        admitted = self._admit(native_session_id)
        if isinstance(admitted, CommandExecutionResult):
            return admitted
        try:
            if options.on_cancellation_ready is not None:
                options.on_cancellation_ready()
            found = self._lookup(admitted, native_session_id, None)
            if isinstance(found, CommandExecutionResult):
                return found
            if found is not None:
                return CommandExecutionResult.failure(
                    "failed", "session-exists", f"Claude already has a session {native_session_id}")
            fields = self._fields(native_session_id, directory, mode=input.mode)
            fields["session_id"] = native_session_id
            if input.title:
                fields["extra_args"] = {"name": input.title}  # titled from its first message
            result = self._prompts.run(admitted, self._adapter, fields, input.text, options.on_session_active)
        finally:
            self._prompts.release(admitted)
        if result.status == "succeeded":
            with self._lock:
                self._directories[native_session_id] = directory
                if input.mode is not None:
                    self._modes[native_session_id] = input.mode
        result.result = {**(result.result or {}), "nativeSessionId": native_session_id, "cwd": directory}
        return result

    def cancel(self, native_session_id: str) -> CommandExecutionResult:
        return self._prompts.cancel(native_session_id)

    def rename_session(self, native_session_id: str, title: str) -> CommandExecutionResult:
        try:
            adapter = self.adapter
        except DriverError as exc:
            return CommandExecutionResult.failure("failed", exc.code, exc.message)
        with self._lock:
            directory = self._directories.get(native_session_id) or self.config.cwd
        try:
            adapter.rename_session(native_session_id, title, directory)
        except FileNotFoundError:
            return CommandExecutionResult.failure(
                "failed", "session-not-found", f"Claude has no session {native_session_id} to rename")
        except ValueError as exc:
            return CommandExecutionResult.failure("failed", "invalid-rename", f"Claude refused the rename: {exc}")
        except Exception as exc:
            report_provider_output(f"the Claude Agent SDK's rename_session (source {self.source.id})",
                                   f"{type(exc).__name__}: {exc}")
            return CommandExecutionResult.failure(
                "failed", "provider-error", f"the Claude Agent SDK's rename_session failed ({type(exc).__name__})")
        return CommandExecutionResult(status="succeeded", result={"title": title})

    def set_mode(self, native_session_id: str, mode: str) -> CommandExecutionResult:
        if mode not in self.source.capabilities.modes:
            return self._unsupported_mode(mode)
        with self._lock:
            self._modes[native_session_id] = mode
        return CommandExecutionResult(status="succeeded", result={"mode": mode})

    def set_config_option(self, native_session_id: str, key: str, value: Any) -> CommandExecutionResult:
        refused = refused_option(self.source.id, key, value)
        if refused is not None:
            return refused
        with self._lock:
            if value is None:
                self._models.pop(native_session_id, None)
            else:
                self._models[native_session_id] = value.strip()
        return CommandExecutionResult(status="succeeded", result={"key": key, "value": value})

    # -- internals -------------------------------------------------------------------

    def _admit(self, session: str) -> PendingPrompt | CommandExecutionResult:
        with self._lock:
            stopped, started = self._stopped, self._started and self._adapter is not None
        if stopped or not started:
            code, what = ("driver-stopped", "was stopped") if stopped else ("driver-not-started", "was not started")
            return CommandExecutionResult.failure("failed", code, f"the Claude driver of source {self.source.id} {what}")
        self._listing.forget(session)  # the listed summary no longer describes it
        return self._prompts.admit(session)

    def _lookup(self, record: PendingPrompt, session: str, directory: str | None) -> Any:
        """The session's info (None: none), or the failure that ends the command: the
        lookup failed, or the prompt was cancelled or stopped while it ran."""
        refused = self._prompts.refused(record)
        if refused is not None:
            return refused
        try:
            info = self._provider_call("get_session_info", lambda: self._adapter.get_session_info(session, directory))
        except DriverError as exc:
            return CommandExecutionResult.failure("failed", "session-lookup-failed", exc.message)
        return self._prompts.refused(record) or info

    def _desktop_start(self, session: str, input: StartInput, directory: str) -> CommandExecutionResult:
        if input.mode is not None:
            return CommandExecutionResult.failure(
                "unsupported", "unsupported-mode",
                "a desktop start takes no mode: the Claude app's own permission setting applies")
        try:
            adapter = self.adapter
            inventory = self._provider_call(
                "list_sessions", lambda: adapter.list_sessions(limit=None, offset=0, directory=None))
            result = self._desktop.start(session, directory, input.text,  # type: ignore[union-attr]
                                         lambda: [str(info.session_id) for info in inventory])
        except DriverError as exc:
            return CommandExecutionResult.failure("failed", exc.code, exc.message)
        except Exception as exc:
            return CommandExecutionResult.failure(
                "unknown", "opener-failed",
                f"opening the Claude app raised {type(exc).__name__}; whether it opened is unknown")
        return CommandExecutionResult(status="succeeded", result=result)

    def _mode(self, session: str) -> str | None:
        with self._lock:
            return self._modes.get(session)

    def _fields(self, session: str, directory: str, *, mode: str | None) -> dict[str, Any]:
        with self._lock:
            model = self._models.get(session)
        return conversation_fields(self.config, directory, mode=mode, model=model)

    def _unsupported_mode(self, mode: str) -> CommandExecutionResult:
        return unsupported_mode(self.source.id, mode, self.source.capabilities.modes)

    def _provider_call(self, name: str, call: Callable[[], _T]) -> _T:
        return provider_call(self.source.id, name, call)  # failures as DriverErrors

"""A fake, fully in-memory AgentDriver whose inventory, reads, faults and commands are scripted.

Use it only for what a real provider cannot be made to show: failing pages and reads,
repeated cursors, duplicate listings, incomplete snapshots, and races staged with gates.
Tests that use it say "fake" in their names.

Every call is appended to `calls` (("list", cursor), ("read", id), ("prompt", id, text),
...) so tests can assert call order. `gate(*key)` makes the call with that key stop until
the test opens the gate; `gate.reached` tells the test the call has arrived. Each read and
list returns a fresh copy, as a real provider's parse would, so consumers can drop it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lib.drivers.base import AgentDriver, Cancelled, CancelSignal, DriverError
from lib.types import (
    AgentSourceConfig,
    CommandExecutionOptions,
    CommandExecutionResult,
    DriverCapabilities,
    NativeSessionSnapshot,
    PromptInput,
    SessionPage,
    StartInput,
)
from tests.support.sessions import make_snapshot, message_for_event, pages_of

# A gate nobody opens fails the test instead of hanging it; this is a guard, not a timing.
GATE_GUARD_SECONDS = 60.0

Call = tuple[Any, ...]
Outcome = CommandExecutionResult | Exception


class Gate:
    """Holds one scripted call until the test opens it."""

    def __init__(self, key: Call) -> None:
        self.key = key
        self.reached = threading.Event()
        self.released = threading.Event()

    def open(self) -> None:
        self.released.set()

    def wait_reached(self) -> None:
        if not self.reached.wait(GATE_GUARD_SECONDS):
            raise AssertionError(f"the call {self.key!r} never reached its gate")

    def pass_through(self) -> None:
        self.reached.set()
        if not self.released.wait(GATE_GUARD_SECONDS):
            raise AssertionError(f"the gate for {self.key!r} was never opened")


@dataclass
class PromptScript:
    """How a prompt (or the prompt part of a start) on one session behaves.

    `raises` is raised before any milestone. `fail_before_ready` returns `result` (or a
    failure) without reaching the milestones. Otherwise the prompt calls
    `on_cancellation_ready`, marks the session active, calls `on_session_active`, then
    waits on the ("prompt-running", id) gate if one exists (cancel() also ends that wait),
    appends the exchange to the session and returns `result` (default: succeeded).
    """

    reply: str = "ok"
    result: CommandExecutionResult | None = None
    raises: Exception | None = None
    fail_before_ready: bool = False
    cancelled_result: CommandExecutionResult | None = None


@dataclass
class _Run:
    done: threading.Event
    cancelled: bool = False
    stopped: bool = False


class ScriptedDriver(AgentDriver):
    """In-memory driver. State is plain attributes so a test can change it mid-script."""

    def __init__(
        self,
        config: AgentSourceConfig | None = None,
        *,
        source_id: str = "scripted",
        kind: str = "codex-app-server",
        snapshots: Iterable[NativeSessionSnapshot] = (),
        pages: dict[str | None, SessionPage] | None = None,
        page_size: int | None = None,
        capabilities: DriverCapabilities | None = None,
        list_faults: dict[str | None, Exception] | None = None,
        read_faults: dict[str, Exception] | None = None,
        prompts: dict[str, PromptScript] | None = None,
        results: dict[tuple[str, str], Outcome] | None = None,
    ) -> None:
        super().__init__(config or AgentSourceConfig(id=source_id, driver=kind))
        if capabilities is not None:
            self.source.capabilities = capabilities
        self.snapshots: dict[str, NativeSessionSnapshot] = {
            s.summary.native_session_id: s for s in snapshots
        }
        self.pages = (
            pages
            if pages is not None
            else pages_of(
                [s.summary.model_copy(deep=True) for s in self.snapshots.values()], page_size
            )
        )
        self.list_faults = dict(list_faults or {})
        self.read_faults = dict(read_faults or {})
        self.prompts = dict(prompts or {})
        self.results = dict(results or {})
        self.calls: list[Call] = []
        self.before_call: list[Callable[[Call], None]] = []
        self.gates: dict[Call, Gate] = {}
        self.stopped = False
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()
        self._turns = itertools.count(1)

    @classmethod

    def initial_capabilities(cls) -> DriverCapabilities:
        return DriverCapabilities(
            list_sessions=True, read_session=True, prompt=True, cancel=True, rename_session=True
        )

    # -- scripting helpers ----------------------------------------------------------------

    def gate(self, *key: Any) -> Gate:
        """The gate for the call `key`, e.g. gate("read", "s1") or gate("list", None)."""
        with self._lock:
            return self.gates.setdefault(key, Gate(key))

    def calls_of(self, kind: str) -> list[Call]:
        return [call for call in self.calls if call[0] == kind]

    def _enter(self, *call: Any) -> None:
        with self._lock:
            self.calls.append(call)
            gate = self.gates.get(call[:2])
        for hook in list(self.before_call):
            hook(call)
        if gate is not None:
            gate.pass_through()
        if self.stopped and call[0] not in ("stop", "start"):
            raise DriverError("driver-stopped", f"source {self.source.id} was stopped")

    def _override(self, operation: str, native_session_id: str) -> CommandExecutionResult | None:
        outcome = self.results.get((operation, native_session_id))
        if isinstance(outcome, Exception):
            raise outcome
        return outcome.model_copy(deep=True) if outcome is not None else None

    # -- lifecycle and inventory ---------------------------------------------------------

    def start(self, signal: CancelSignal | None = None) -> None:
        self._enter("start")
        if signal is not None and signal.cancelled:
            raise Cancelled()
        self.stopped = False

    def stop(self) -> None:
        self._enter("stop")
        with self._lock:
            self.stopped = True
            runs = list(self._runs.values())
        for run in runs:  # a provider exit rejects pending work
            run.stopped = True
            run.done.set()

    def list_sessions(self, cursor: str | None = None) -> SessionPage:
        self._enter("list", cursor)
        if cursor in self.list_faults:
            raise self.list_faults[cursor]
        with self._lock:
            page = self.pages.get(cursor)
            if page is None:
                raise DriverError("invalid-cursor", f"unknown cursor {cursor!r}")
            page = page.model_copy(deep=True)
            for summary in page.sessions:
                if summary.native_session_id in self._runs:
                    summary.active = True
        return page

    def read_session(self, native_session_id: str) -> NativeSessionSnapshot:
        self._enter("read", native_session_id)
        if native_session_id in self.read_faults:
            raise self.read_faults[native_session_id]
        with self._lock:
            stored = self.snapshots.get(native_session_id)
            if stored is None:
                raise DriverError("session-not-found", f"no session {native_session_id}")
            snapshot = stored.model_copy(deep=True)
            if native_session_id in self._runs:
                snapshot.summary.active = True
        return snapshot

    # -- commands -------------------------------------------------------------------------

    def prompt(
        self,
        native_session_id: str,
        input: PromptInput,
        options: CommandExecutionOptions | None = None,
    ) -> CommandExecutionResult:
        self._enter("prompt", native_session_id, input.text)
        override = self._override("prompt", native_session_id)
        if override is not None:
            return override
        if native_session_id not in self.snapshots:
            return CommandExecutionResult.failure(
                "failed", "session-not-found", f"no session {native_session_id}"
            )
        return self._run_prompt(native_session_id, input.text, options)

    def start_session(
        self,
        native_session_id: str,
        input: StartInput,
        options: CommandExecutionOptions | None = None,
    ) -> CommandExecutionResult:
        self._enter("start-session", native_session_id, input.text)
        if not self.source.capabilities.start_session:
            return CommandExecutionResult.unsupported("start", self.source.id)
        override = self._override("start", native_session_id)
        if override is not None:
            return override
        with self._lock:
            if native_session_id in self.snapshots:
                return CommandExecutionResult.failure(
                    "failed", "session-exists", f"session {native_session_id} already exists"
                )
            snapshot = make_snapshot(native_session_id, events=0, title=input.title, cwd=input.cwd)
            self.snapshots[native_session_id] = snapshot
            first = self.pages.setdefault(None, SessionPage())
            first.sessions.append(snapshot.summary.model_copy(deep=True))
        return self._run_prompt(native_session_id, input.text, options)

    def cancel(self, native_session_id: str) -> CommandExecutionResult:
        self._enter("cancel", native_session_id)
        override = self._override("cancel", native_session_id)
        if override is not None:
            return override
        with self._lock:
            run = self._runs.get(native_session_id)
        if run is None:
            return CommandExecutionResult.failure(
                "failed",
                "no-active-prompt",
                f"no prompt of this source is running in {native_session_id}",
            )
        run.cancelled = True
        run.done.set()
        return CommandExecutionResult(status="succeeded")

    def rename_session(self, native_session_id: str, title: str) -> CommandExecutionResult:
        self._enter("rename", native_session_id, title)
        override = self._override("rename", native_session_id)
        if override is not None:
            return override
        with self._lock:
            snapshot = self.snapshots.get(native_session_id)
            if snapshot is None:
                return CommandExecutionResult.failure(
                    "failed", "session-not-found", f"no session {native_session_id}"
                )
            snapshot.summary.title = title
            for page in self.pages.values():
                for summary in page.sessions:
                    if summary.native_session_id == native_session_id:
                        summary.title = title
        return CommandExecutionResult(status="succeeded")

    def set_mode(self, native_session_id: str, mode: str) -> CommandExecutionResult:
        self._enter("set-mode", native_session_id, mode)
        override = self._override("set-mode", native_session_id)
        return override or super().set_mode(native_session_id, mode)

    def set_config_option(
        self, native_session_id: str, key: str, value: Any
    ) -> CommandExecutionResult:
        self._enter("set-config-option", native_session_id, key)
        override = self._override("set-config-option", native_session_id)
        return override or super().set_config_option(native_session_id, key, value)

    def _run_prompt(
        self, native_session_id: str, text: str, options: CommandExecutionOptions | None
    ) -> CommandExecutionResult:
        script = self.prompts.get(native_session_id, PromptScript())
        if script.raises is not None:
            raise script.raises
        if script.fail_before_ready:
            return script.result or CommandExecutionResult.failure(
                "failed", "prompt-failed", f"the prompt on {native_session_id} failed"
            )
        running_gate = self.gates.get(("prompt-running", native_session_id))
        run = _Run(done=running_gate.released if running_gate else threading.Event())
        with self._lock:
            self._runs[native_session_id] = run
        try:
            if options and options.on_cancellation_ready:
                options.on_cancellation_ready()
            if options and options.on_session_active:
                options.on_session_active()
            if running_gate is not None:
                running_gate.pass_through()  # opened by the test or by cancel()/stop()
        finally:
            with self._lock:
                self._runs.pop(native_session_id, None)
        if run.stopped:
            raise DriverError(
                "provider-exited", f"source {self.source.id} stopped during the prompt"
            )
        if run.cancelled:
            return script.cancelled_result or CommandExecutionResult.failure(
                "failed", "cancelled", f"the prompt on {native_session_id} was cancelled"
            )
        turn = f"turn-{next(self._turns)}"
        self._append_exchange(native_session_id, turn, text, script.reply)
        return script.result or CommandExecutionResult(
            status="succeeded", provider_operation_id=turn, result={"reply": script.reply}
        )

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], config: AgentSourceConfig | None = None
    ) -> ScriptedDriver:
        """Build from a JSON script; see tests/support/scripted_driver_file.py for the format."""
        from tests.support.scripted_driver_file import driver_from_dict

        return driver_from_dict(data, config)

    def _append_exchange(self, native_session_id: str, turn: str, text: str, reply: str) -> None:
        with self._lock:
            snapshot = self.snapshots[native_session_id]
            for role, body in (("user", text), ("assistant", reply)):
                event = {"type": role, "id": f"{turn}-{role}", "text": body}
                snapshot.normalized_messages.append(message_for_event(event, len(snapshot.events)))
                snapshot.events.append(event)

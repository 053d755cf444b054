"""Claude prompts this driver runs: pending records, the SDK conversation, cancel and stop.

A prompt (or headless start) is admitted as a `PendingPrompt` before anything else, so
`cancel()` can address it at once (the driver's `on_cancellation_ready` comes right after
admission, before the session lookup). Cancelling a prompt whose conversation has not
reached the CLI marks it and the conversation never starts; cancelling one that has
interrupts that conversation (`ClaudeSDKClient.interrupt()`), and only a conversation
this object started. `stop()` does both for every prompt, then ends what is left.

The conversation runs on the driver's private loop; the caller's thread waits for it.
At the conversation's first SDK message that shows the session exists (Claude's `init`
message, or any message that is not a system message) the session is counted as running
(`running`, which the driver's `active` reads) and the caller's thread calls
`on_session_active`; the conversation reads nothing more until that call returns. The
final `ResultMessage` decides the status. No elapsed-time limit anywhere: a prompt ends by
its result, a cancel or a stop.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lib.drivers.child_channels import (
    STDERR_TAIL_LINES,
    clean_line,
    provider_output,
    report_provider_output,
)
from lib.drivers.claude_loop import ClaudeLoop
from lib.drivers.claude_sdk_adapter import ClaudeSdkAdapter
from lib.types import CommandError, CommandExecutionResult

if TYPE_CHECKING:
    import anyio

LOG = logging.getLogger("agentctl.claude")
# How long stop() waits for interrupted conversations to end (the SDK's own close gives a
# CLI 5 s after its stdin closes, then SIGTERM, then SIGKILL 5 s later).
STOP_GRACE_SECONDS = 20.0


@dataclass
class PendingPrompt:
    """One admitted prompt. Its fields change under `ClaudePrompts._lock` only."""

    session: str
    cancelled: bool = False
    stopped: bool = False
    connected: bool = False  # the CLI runs: a cancel interrupts it
    delivered: bool = False  # the prompt was written to the CLI
    client: Any = None
    scope: anyio.CancelScope | None = None
    future: concurrent.futures.Future[Any] | None = None
    stderr: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=STDERR_TAIL_LINES))


class _Failure(Exception):
    def __init__(self, status: str, code: str, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.detail = status, code, message, detail


class ClaudePrompts:
    def __init__(self, source_id: str, loop: ClaudeLoop) -> None:
        self.source_id = source_id
        self._loop = loop
        self._lock = threading.Lock()
        self._pending: dict[str, PendingPrompt] = {}
        self._stopped = False
        # Native session id -> conversations of this driver running on it (read for `active`).
        self.running: dict[str, int] = {}

    # -- admission -------------------------------------------------------------------

    def admit(self, session: str) -> PendingPrompt | CommandExecutionResult:
        """A pending record for a new prompt on `session`, or the result that refuses it."""
        with self._lock:
            if self._stopped:
                return CommandExecutionResult.failure(
                    "failed", "driver-stopped", f"the Claude driver of source {self.source_id} was stopped")
            if session in self._pending:
                # Two conversations resuming one session would each append their own branch.
                return CommandExecutionResult.failure(
                    "needs-confirmation", "prompt-in-progress",
                    f"a prompt from this connector is still running on session {session}")
            record = PendingPrompt(session)
            self._pending[session] = record
            return record

    def release(self, record: PendingPrompt) -> None:
        with self._lock:
            if self._pending.get(record.session) is record:
                del self._pending[record.session]

    def refused(self, record: PendingPrompt) -> CommandExecutionResult | None:
        """The failure for a prompt cancelled or stopped before its conversation started."""
        with self._lock:
            if record.stopped:
                return CommandExecutionResult.failure(
                    "failed", "driver-stopped",
                    f"the Claude driver of source {self.source_id} stopped before the prompt started")
            if record.cancelled:
                return CommandExecutionResult.failure(
                    "failed", "cancelled", "the prompt was cancelled before Claude started")
        return None

    def running_sessions(self) -> set[str]:
        with self._lock:
            return {session for session, count in self.running.items() if count > 0}

    # -- the conversation --------------------------------------------------------------

    def run(self, record: PendingPrompt, adapter: ClaudeSdkAdapter, options_fields: dict[str, Any],
            text: str, on_session_active: Callable[[], None] | None) -> CommandExecutionResult:
        """Run the conversation of an admitted prompt and wait for its outcome."""
        refused = self.refused(record)
        if refused is not None:
            return refused
        events: queue.Queue[tuple[str, Any]] = queue.Queue()

        def stderr_line(line: str) -> None:
            record.stderr.append(clean_line(line.encode("utf-8", "replace")))

        options = adapter.options(**options_fields, stderr=stderr_line)
        try:
            future = self._loop.submit(self._converse(record, adapter, options, text, events))
        except Exception:
            return CommandExecutionResult.failure(
                "failed", "driver-stopped", f"the Claude driver of source {self.source_id} was stopped")
        with self._lock:
            record.future = future
        future.add_done_callback(lambda _: events.put(("done", None)))
        counted = False
        try:
            while True:
                try:
                    kind, payload = events.get(timeout=0.5)
                except queue.Empty:
                    if not self._loop.running and not future.done():
                        future.cancel()  # the stopped loop will never finish it
                    continue
                if kind == "done":
                    break
                with self._lock:
                    self.running[record.session] = self.running.get(record.session, 0) + 1
                counted = True
                try:
                    if on_session_active is not None:
                        on_session_active()
                except Exception:  # the worker's refresh; the prompt goes on regardless
                    LOG.exception("the session-active callback of a Claude prompt failed")
                finally:
                    self._loop.call_soon(payload.set)
        finally:
            if counted:
                with self._lock:
                    left = self.running.get(record.session, 0) - 1
                    if left > 0:
                        self.running[record.session] = left
                    else:
                        self.running.pop(record.session, None)
        return self._outcome(record, future, adapter)

    async def _converse(self, record: PendingPrompt, adapter: ClaudeSdkAdapter, options: Any, text: str,
                        events: queue.Queue[tuple[str, Any]]) -> Any:
        import anyio  # the SDK's own dependency: imported only once a Claude prompt runs
        import anyio.lowlevel

        client = adapter.client(options)
        with anyio.CancelScope() as scope:
            with self._lock:
                record.scope, record.client = scope, client
                if record.cancelled or record.stopped:
                    scope.cancel()
            await anyio.lowlevel.checkpoint()
            try:
                await client.connect()
            except adapter.cli_not_found as exc:
                raise _Failure("failed", "cli-not-found",
                               f"the Claude Code CLI for source {self.source_id} cannot be found "
                               f"(the SDK's bundled one, a configured command, or claude on PATH)",
                               detail=str(exc)) from None
            except Exception as exc:
                raise _Failure("failed", "cli-failed",
                               f"the Claude Code CLI of source {self.source_id} failed to start "
                               f"({type(exc).__name__}); agentctl -v shows what it wrote",
                               detail=provider_output(record.stderr) or str(exc)) from None
            try:
                with self._lock:
                    if record.cancelled or record.stopped:
                        return None
                    record.connected = True
                await client.query(text)
                with self._lock:
                    record.delivered = True
                result = None
                shown = False
                async for message in client.receive_response():
                    if not shown and (not adapter.is_system(message) or getattr(message, "subtype", None) == "init"):
                        shown = True
                        gate = anyio.Event()
                        events.put(("active", gate))
                        await gate.wait()
                    if adapter.is_result(message):
                        result = message
                return result
            finally:
                await client.disconnect()
        return None  # cancelled by stop()

    def _outcome(self, record: PendingPrompt, future: concurrent.futures.Future[Any],
                 adapter: ClaudeSdkAdapter) -> CommandExecutionResult:
        name = f"the Claude Code CLI (source {self.source_id})"
        try:
            result = future.result()
        except _Failure as failure:
            report_provider_output(name, failure.detail)
            return CommandExecutionResult.failure(failure.status, failure.code, failure.message)
        except concurrent.futures.CancelledError:
            result = None
        except Exception as exc:
            detail = provider_output(record.stderr) or f"{type(exc).__name__}: {exc}"
            report_provider_output(name, detail)
            with self._lock:
                delivered = record.delivered
            if not delivered:
                return CommandExecutionResult.failure(
                    "failed", "cli-failed",
                    f"{name} failed before it received the prompt ({type(exc).__name__}); "
                    f"agentctl -v shows what it wrote")
            return CommandExecutionResult.failure(
                "unknown", "cli-exited",
                f"{name} ended without a result after it received the prompt ({type(exc).__name__}), "
                f"so whether the turn completed is unknown; agentctl -v shows what it wrote")
        if result is None:
            refused = self.refused(record)
            with self._lock:
                delivered = record.delivered
            if delivered:
                return CommandExecutionResult.failure(
                    "unknown", "driver-stopped",
                    f"the Claude driver of source {self.source_id} stopped during the prompt, "
                    f"so whether the turn completed is unknown")
            return refused or CommandExecutionResult.failure(
                "unknown", "no-result", f"{name} ended the conversation without a result")
        with self._lock:
            cancelled = record.cancelled or record.stopped
        return result_of(result, cancelled=cancelled)

    # -- cancel and stop ---------------------------------------------------------------

    def cancel(self, session: str) -> CommandExecutionResult:
        """Cancel this driver's prompt on `session`: before its conversation started, mark
        it (it never starts); after, interrupt that conversation."""
        with self._lock:
            record = self._pending.get(session)
            if record is None:
                return CommandExecutionResult.failure(
                    "failed", "no-active-prompt",
                    f"no prompt started by this connector is running on session {session}")
            record.cancelled = True
            client = record.client if record.connected else None
        if client is None:
            return CommandExecutionResult(status="succeeded", result={"interrupted": False})
        try:
            self._loop.wait(self._loop.submit(client.interrupt()))
        except Exception as exc:
            with self._lock:
                ended = self._pending.get(session) is not record
            if ended:
                return CommandExecutionResult.failure(
                    "failed", "no-active-prompt", f"the prompt on session {session} ended before the cancel reached it")
            report_provider_output(f"the Claude Code CLI (source {self.source_id})", f"{type(exc).__name__}: {exc}")
            return CommandExecutionResult.failure(
                "unknown", "interrupt-failed",
                f"the interrupt of the prompt on session {session} failed ({type(exc).__name__}); "
                f"whether the turn stopped is unknown")
        return CommandExecutionResult(status="succeeded", result={"interrupted": True})

    def stop(self) -> None:
        """Refuse new prompts, mark every pending one, interrupt and end every running
        conversation, and wait (bounded) for them to finish."""
        with self._lock:
            self._stopped = True
            records = list(self._pending.values())
            for record in records:
                record.stopped = True
            connected = [r.client for r in records if r.connected and r.client is not None]
        interrupts = []
        for client in connected:
            try:
                interrupts.append(self._loop.submit(client.interrupt()))
            except Exception:
                pass
        concurrent.futures.wait(interrupts, timeout=STOP_GRACE_SECONDS / 4)
        for record in records:
            with self._lock:
                scope = record.scope
            if scope is not None:
                self._loop.call_soon(scope.cancel)
        futures = [r.future for r in records if r.future is not None]
        concurrent.futures.wait(futures, timeout=STOP_GRACE_SECONDS)


def result_of(result: Any, *, cancelled: bool = False) -> CommandExecutionResult:
    """The final `ResultMessage` as the command's result: a success only when Claude says
    so (`is_error` false); the SDK's own result text is left out (it is transcript text)."""
    details = {
        "sessionId": result.session_id,
        "subtype": result.subtype,
        "isError": bool(result.is_error),
        "terminalReason": getattr(result, "terminal_reason", None),
        "stopReason": result.stop_reason,
        "numTurns": result.num_turns,
        "durationMs": result.duration_ms,
        "totalCostUsd": result.total_cost_usd,
    }
    api_status = getattr(result, "api_error_status", None)
    if api_status is not None:
        details["apiErrorStatus"] = api_status
    details = {key: value for key, value in details.items() if value is not None}
    operation = result.uuid if isinstance(getattr(result, "uuid", None), str) and result.uuid else None
    if not result.is_error and result.subtype == "success":
        return CommandExecutionResult(status="succeeded", provider_operation_id=operation, result=details)
    reason = details.get("terminalReason") or result.subtype
    if api_status is not None or reason == "api_error":
        code, message = "api-error", f"the model API answered with an error (status {api_status})"
    elif cancelled and reason in ("aborted_streaming", "aborted_tools") or result.subtype == "error_during_execution" \
            and cancelled:
        code, message = "prompt-interrupted", "the prompt was interrupted by a cancel"
    else:
        code = "claude-" + str(reason).replace("_", "-")
        message = f"Claude ended the turn with {result.subtype} ({reason})"
    return CommandExecutionResult(status="failed", provider_operation_id=operation, result=details,
                                  error=CommandError(code=code, message=message))

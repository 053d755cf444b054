"""The ACP driver's commands: prompt, start, cancel, set mode, set a configuration option.

* Prompt: the session is made ready in this agent process (`session/resume` when the
  agent advertises it, else `session/load`, serialised with reads), then `session/prompt`
  is sent. Once it is written the prompt has started: `cancel()` can address it, and the
  worker's two milestones are called (cancellation ready, then the session refresh,
  awaited). The answer's `stopReason` decides the status: `end_turn` succeeded, anything
  else (`cancelled`, `refusal`, `max_tokens`, `max_turn_requests`) failed with code
  `stop-<reason>`. Contact lost after the prompt was sent is `unknown`.
* Start: `session/new` in the start's `cwd` (else the source's), the caller's session id
  mapped to the id the agent gives, a start `mode` set when that session advertises it,
  then the first prompt as above. The result names the agent's id (`agentSessionId`), and
  the session's summaries carry the caller's id as `startedAs`.
* Cancel: `session/cancel`, only while a prompt this driver started is running.
* Set mode / set option: checked against the target session's controls (learned by making
  the session ready first when this process has not yet), then `session/set_mode` or
  `session/set_config_option`, whose answer replaces the session's option descriptors.
* Rename: ACP has no portable rename; the base driver's `unsupported` result.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from lib.drivers.acp_connection import AgentRequestFailed, ConnectionLost
from lib.drivers.acp_controls import Refusal
from lib.drivers.base import DriverError
from lib.types import (
    CommandError,
    CommandExecutionOptions,
    CommandExecutionResult,
    PromptInput,
    StartInput,
)


class PromptState:
    """A connector-owned prompt: preparing until its `session/prompt` is written."""

    def __init__(self) -> None:
        self.sent = False
        self.progress = threading.Event()  # set when sent, and when the prompt ends

    def mark_sent(self) -> None:
        self.sent = True
        self.progress.set()


class AcpCommands:
    """Mixed into `AcpDriver`; uses its loop, connection, controls and session maps."""

    # -- prompt and start --------------------------------------------------------------

    def prompt(self, native_session_id: str, input: PromptInput,
               options: CommandExecutionOptions | None = None) -> CommandExecutionResult:
        session_id = self.agent_session_id(native_session_id)
        prompt, busy = self._claim_prompt(session_id)
        if busy is not None:
            return busy
        try:
            try:
                cwd = self.session_cwd(session_id)
                if session_id not in self._started_as.values() or session_id not in self._opened:
                    self._run(self._ready(session_id, cwd))
            except DriverError as exc:  # nothing was sent to prompt yet: provably not run
                return _failed_before_sending(exc)
            return self._run_prompt(session_id, input.text, prompt, options or CommandExecutionOptions())
        finally:
            self._release_prompt(session_id)

    def start_session(self, native_session_id: str, input: StartInput,
                      options: CommandExecutionOptions | None = None) -> CommandExecutionResult:
        with self._lock:
            taken = native_session_id in self._started_as or native_session_id in self._infos
        if taken:
            return CommandExecutionResult.failure(
                "failed", "session-exists", f"session {native_session_id} exists already on source {self.source.id}")
        directory = input.cwd or self.config.cwd
        if not directory:
            return CommandExecutionResult.failure(
                "failed", "cwd-required",
                f"a start on source {self.source.id} needs a cwd: the source has none, so the start must name one")
        cwd = os.path.abspath(os.path.expanduser(directory))
        try:
            response = self._run(self._call(lambda conn: conn.new_session(cwd=cwd, mcp_servers=[])))
        except DriverError as exc:
            return _failed_before_sending(exc)
        session_id = response.session_id
        with self._lock:
            self._started_as[native_session_id] = session_id
            self._cwds[session_id] = cwd
        self.controls.learn(session_id, response)
        self._opened.add(session_id)
        self.publish_controls()
        if input.mode is not None:
            changed = self.set_mode(native_session_id, input.mode)
            if changed.status != "succeeded":
                return _with_result(changed, {"agentSessionId": session_id})
        prompt, busy = self._claim_prompt(session_id)
        if busy is not None:
            return busy
        try:
            outcome = self._run_prompt(session_id, input.text, prompt, options or CommandExecutionOptions())
        finally:
            self._release_prompt(session_id)
        return _with_result(outcome, {"agentSessionId": session_id})

    def _claim_prompt(self, session_id: str) -> tuple[PromptState, CommandExecutionResult | None]:
        prompt = PromptState()
        with self._lock:
            if session_id in self._prompts:
                return prompt, CommandExecutionResult.failure(
                    "needs-confirmation", "prompt-in-progress",
                    f"a prompt from this connector is still running on session {session_id}")
            self._prompts[session_id] = prompt
        self.updates.watch(session_id)
        return prompt, None

    def _release_prompt(self, session_id: str) -> None:
        with self._lock:
            self._prompts.pop(session_id, None)
        self.updates.unwatch(session_id)

    async def _ready(self, session_id: str, cwd: str) -> None:
        """Make the session ready in this agent process: resume when advertised (no
        replay), else load (serialised with reads); either teaches its controls."""
        if self.resume_supported:
            response = await self._call(lambda conn: conn.resume_session(
                session_id=session_id, cwd=cwd, mcp_servers=[]))
            self.controls.learn(session_id, response)
            self._opened.add(session_id)
            self.publish_controls()
        else:
            await self.load(session_id, cwd)

    async def _send_prompt(self, session_id: str, text: str) -> tuple[Any, int]:
        from acp import text_block

        response = await self._call(lambda conn: conn.prompt(session_id=session_id, prompt=[text_block(text)]))
        return response, len(self.updates.watched(session_id))

    def _run_prompt(self, session_id: str, text: str, prompt: PromptState,
                    options: CommandExecutionOptions) -> CommandExecutionResult:
        loop = self._loop
        if loop is None:
            return _failed_before_sending(DriverError("driver-stopped", f"the driver of source {self.source.id} was stopped"))
        try:
            future = loop.submit(self._send_prompt(session_id, text))
        except Exception:  # noqa: BLE001 - the loop closed: the driver stopped
            return _failed_before_sending(DriverError("driver-stopped", f"the driver of source {self.source.id} was stopped"))
        future.add_done_callback(lambda _f: prompt.progress.set())
        prompt.progress.wait()
        if prompt.sent:
            if options.on_cancellation_ready is not None:
                options.on_cancellation_ready()
            if options.on_session_active is not None:
                options.on_session_active()
        try:
            response, updates = self._run_wait(future)
        except AgentRequestFailed as exc:
            return CommandExecutionResult.failure("failed", "provider-error", exc.message)
        except DriverError as exc:
            if not prompt.sent:
                return _failed_before_sending(exc)
            return CommandExecutionResult.failure(
                "unknown", "transport-lost",
                f"lost contact with {self.name} after sending the prompt, so whether it ran is unknown: "
                f"{exc.message}")
        reason = str(response.stop_reason)
        details = {"stopReason": reason, "sessionId": session_id, "updates": updates}
        if reason == "end_turn":
            return CommandExecutionResult(status="succeeded", result=details)
        return CommandExecutionResult(
            status="failed", result=details,
            error=CommandError(code=f"stop-{reason.replace('_', '-')}",
                               message=f"the agent ended the prompt with stopReason {reason}"))

    def _run_wait(self, future: Any) -> Any:
        from lib.drivers.acp_loop import LoopClosed

        loop = self._loop
        try:
            if loop is None:
                return future.result()
            return loop.wait(future)
        except LoopClosed:
            raise ConnectionLost("driver-stopped", f"{self.name} was stopped") from None
        except Exception as exc:
            if isinstance(exc, DriverError):
                raise
            raise ConnectionLost("driver-stopped", f"{self.name} was stopped") from None

    # -- cancel, modes, options --------------------------------------------------------

    def cancel(self, native_session_id: str) -> CommandExecutionResult:
        session_id = self.agent_session_id(native_session_id)
        with self._lock:
            prompt = self._prompts.get(session_id)
            running = prompt is not None and prompt.sent
        if not running:
            return CommandExecutionResult.failure(
                "failed", "no-active-prompt",
                f"no prompt started by this connector is running on session {native_session_id}")
        try:
            self._run(self._call(lambda conn: conn.cancel(session_id=session_id)))
        except DriverError as exc:
            return CommandExecutionResult.failure("failed", exc.code, exc.message)
        return CommandExecutionResult(status="succeeded", result={"sessionId": session_id})

    def set_mode(self, native_session_id: str, mode: str) -> CommandExecutionResult:
        session_id = self.agent_session_id(native_session_id)
        refused = self._checked(session_id, lambda: self.controls.check_mode(session_id, mode))
        if refused is not None:
            return refused
        try:
            self._run(self._call(lambda conn: conn.set_session_mode(session_id=session_id, mode_id=mode)))
        except DriverError as exc:
            return _command_failure(exc)
        self.controls.mode_set(session_id, mode)
        return CommandExecutionResult(status="succeeded", result={"sessionId": session_id, "mode": mode})

    def set_config_option(self, native_session_id: str, key: str, value: Any) -> CommandExecutionResult:
        session_id = self.agent_session_id(native_session_id)
        refused = self._checked(session_id, lambda: self.controls.check_option(session_id, key, value))
        if refused is not None:
            return refused
        try:
            response = self._run(self._call(lambda conn: conn.set_config_option(
                config_id=key, session_id=session_id, value=value)))
        except DriverError as exc:
            return _command_failure(exc)
        self.controls.replace_options(session_id, response.config_options)
        self.publish_controls()
        return CommandExecutionResult(status="succeeded",
                                      result={"sessionId": session_id, "key": key, "value": value})

    def _checked(self, session_id: str, check: Any) -> CommandExecutionResult | None:
        """Ready the session in this agent process first (which teaches its controls),
        then run `check`; its refusal, or a failure to ready, as a result."""
        try:
            if session_id not in self._opened:
                self._run(self._ready(session_id, self.session_cwd(session_id)))
            check()
        except Refusal as refusal:
            return CommandExecutionResult.failure(refusal.status, refusal.code, refusal.message)  # type: ignore[arg-type]
        except DriverError as exc:
            return _command_failure(exc)
        return None


def _failed_before_sending(exc: DriverError) -> CommandExecutionResult:
    """Nothing reached the agent as a prompt: failed, retryable when contact was lost."""
    return CommandExecutionResult.failure("failed", exc.code, exc.message,
                                          retryable=isinstance(exc, ConnectionLost) or exc.code == "driver-stopped")


def _command_failure(exc: DriverError) -> CommandExecutionResult:
    if isinstance(exc, AgentRequestFailed):
        return CommandExecutionResult.failure("failed", "provider-error", exc.message)
    if isinstance(exc, ConnectionLost):
        return CommandExecutionResult.failure(
            "unknown", "transport-lost", f"lost contact with the agent, so whether the change took effect is "
                                         f"unknown: {exc.message}")
    return CommandExecutionResult.failure("failed", exc.code, exc.message)


def _with_result(outcome: CommandExecutionResult, extra: dict[str, Any]) -> CommandExecutionResult:
    return outcome.model_copy(update={"result": {**(outcome.result or {}), **extra}})

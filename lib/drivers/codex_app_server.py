"""The Codex driver: inventory, reads and commands over a real `codex app-server`.

One child process per started driver (see `codex_launch` for how it is launched and
`jsonrpc_transport` for the wire). Inventory lists active threads, then archived ones,
with every model provider and source kind (Codex hides other providers and
non-interactive sources by default). Prompts resume the thread, start a turn and wait
for that turn's `turn/completed`; approval requests are declined, because the connector
has no one to ask.

Collection calls (start-up, inventory pages, reads) fail with `provider-stalled` when
Codex sends nothing at all for the source's `stallTimeoutSeconds`, and any message longer
than its `maxLineBytes` fails with `line-too-long`; either ends the child. Prompts have no
elapsed-time limit: they end by their outcome, a cancel, or a stop.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

from lib.drivers.base import (
    AgentDriver,
    CancelSignal,
    DriverError,
    DriverUnavailable,
    InventoryFingerprint,
)
from lib.drivers.codex_early import adopt
from lib.drivers.codex_fingerprint import codex_inventory_fingerprint
from lib.drivers.codex_launch import plan_launch, start_daemon
from lib.drivers.codex_list_ahead import AskedPage, ListAhead
from lib.drivers.codex_list_params import initialize_params
from lib.drivers.codex_threads import (
    list_params,
    page_follows,
    page_from_list,
    rollout_bytes,
    snapshot_from_read,
)
from lib.drivers.jsonrpc_messages import RpcError, TransportClosed
from lib.types import (
    AgentSourceConfig,
    CommandError,
    CommandExecutionOptions,
    CommandExecutionResult,
    DriverCapabilities,
    NativeSessionSnapshot,
    PromptInput,
    SessionPage,
    SessionSummary,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from lib.drivers.jsonrpc_transport import JsonRpcTransport, PendingCall

PAGE_SIZE = 100  # the most one thread/list returns
NO_TURNS_YET = "list_turns is not supported yet"
# The source setting to change when a fault bound stops a provider that was merely slow or big.
FAULT_HINTS = {
    "provider-stalled": "if the provider is only slow, raise stallTimeoutSeconds",
    "line-too-long": "if that is a real session, raise maxLineBytes",
}
# Server requests that ask a person to approve something, and the answer that declines.
DECLINES: dict[str, Any] = {
    "item/commandExecution/requestApproval": {"decision": "decline"},
    "item/fileChange/requestApproval": {"decision": "decline"},
    "item/permissions/requestApproval": {"permissions": {}, "scope": "turn"},
    "execCommandApproval": {"decision": {"denied": {"rejection": "declined by agentctl"}}},
    "applyPatchApproval": {"decision": {"denied": {"rejection": "declined by agentctl"}}},
}


@dataclass
class _Prompt:
    """A connector-owned prompt: starting until Codex names its turn, then running."""

    turn_id: str | None = None


def _client_version() -> str:
    try:
        return metadata.version("agentctl")
    except metadata.PackageNotFoundError:
        return "0.0.0"


class CodexAppServerDriver(AgentDriver):
    driver_kind = "codex-app-server"

    def __init__(self, config: AgentSourceConfig, *, page_size: int = PAGE_SIZE) -> None:
        super().__init__(config)
        self.page_size = page_size
        # Imported here: describing a source (idle resync) needs the class, not the transport.
        from lib.drivers.jsonrpc_transport import JsonRpcTransport

        # Named with the source: its failures (and, with -v, its own output) say which one.
        self._transport = JsonRpcTransport(name=f"codex app-server (source {self.source.id})",
                                           on_server_request=self._answer_server_request,
                                           max_line_bytes=config.max_line_bytes)
        # Seconds of silence that fail a collection call (the source's stallTimeoutSeconds).
        self.stall_timeout = config.stall_timeout_seconds
        self._lock = threading.Lock()
        self._prompts: dict[str, _Prompt] = {}
        self.listing = ListAhead(self._ask_page, lambda page, result: page_follows(page.context[0], result))  # pages asked ahead (codex_list_ahead.py)

    @classmethod
    def initial_capabilities(cls) -> DriverCapabilities:
        return DriverCapabilities(list_sessions=True, read_session=True, prompt=True, cancel=True, rename_session=True)

    @classmethod
    def inventory_fingerprint(cls, config: AgentSourceConfig) -> InventoryFingerprint | None:
        return codex_inventory_fingerprint(config)

    # -- lifecycle -------------------------------------------------------------------

    def start(self, signal: CancelSignal | None = None) -> None:
        self.listing.reset()
        launch = plan_launch(self.config, collecting=self.collection_only)
        start_daemon(launch, signal)
        # the fast path's child for exactly this launch, with its early answers if any (codex_early.py)
        early = adopt(launch, self, _client_version) if launch.framing == "lines" else None
        try:
            self._transport.start(launch.argv, env=launch.env, cwd=launch.cwd, framing=launch.framing,
                                  signal=signal, stall_timeout=self.stall_timeout, process=getattr(early, "process", None),
                                  one_cpu=launch.one_cpu)
        except FileNotFoundError:
            raise DriverUnavailable(
                "program-not-found", f"cannot run {launch.argv[0]!r}: no such program (source {self.source.id})"
            ) from None
        except PermissionError:
            raise DriverUnavailable(
                "program-not-found", f"cannot run {launch.argv[0]!r}: not executable (source {self.source.id})"
            ) from None
        except TransportClosed as exc:
            raise self._start_failure(exc) from None
        try:
            answer = getattr(early, "initialized", None) or self._transport.request(
                "initialize",
                initialize_params(_client_version()),
                signal=signal,
                stall_timeout=self.stall_timeout,
            )
            if not getattr(early, "initialized", None):
                self._transport.notify("initialized")
        except TransportClosed as exc:
            self._transport.stop()
            raise self._start_failure(exc) from None
        except BaseException:
            self._transport.stop()
            raise
        agent = answer.get("userAgent") if isinstance(answer, dict) else None
        match = re.match(r"[^/\s]+/(\S+)", agent or "")
        self.source.provider_version = match.group(1) if match else None

    def stop(self) -> None:
        self.listing.reset()
        self._transport.stop()

    def list_ahead(self) -> None:
        """Begin listing now, before the collection asks (`sync`'s early start, once the
        observation sequence is allocated): the first pages are made while it sets up."""
        self.listing.start()

    @property
    def transport(self) -> JsonRpcTransport:
        """The JSON-RPC connection to the child (for diagnostics and tests)."""
        return self._transport

    # -- inventory and reads ---------------------------------------------------------

    def list_sessions(self, cursor: str | None = None) -> SessionPage:
        return self.begin_list_sessions(cursor)()

    def begin_list_sessions(self, cursor: str | None = None) -> Callable[[], SessionPage]:
        """Ask for the page at `cursor` now (unless it was asked ahead); the returned call
        waits for it. Codex answers a request while others are outstanding (reads
        included, each with its own answer), so each page is asked as soon as the one
        before it is answered, within a budget (codex_list_ahead.py)."""
        page = self.listing.begin(cursor)

        def take() -> SessionPage:
            try:
                result, _ = self._answer_sized("thread/list", page.pending)
            finally:
                self.listing.taken(page)
            archived, owned = page.context
            return page_from_list(result, archived=archived, owned=owned)

        return take

    def _ask_page(self, cursor: str | None) -> AskedPage:
        archived, params = list_params(cursor, self.page_size)
        owned = self._owned_threads()  # captured before the call, as for a read
        pending = self._begin_call("thread/list", params, keep_bytes=True)  # held ahead as bytes (codex_list_ahead.py)
        return AskedPage(cursor, pending, (archived, owned))

    def read_session(self, native_session_id: str) -> NativeSessionSnapshot:
        return self.read_session_sized(native_session_id)[0]

    def read_session_sized(self, native_session_id: str) -> tuple[NativeSessionSnapshot, int]:
        """`read_session`, with the bytes Codex answered (the read-ahead's memory budget)."""
        return self.begin_read_session_sized(native_session_id)()

    def begin_read_session_sized(self, native_session_id: str) -> Callable[[], tuple[NativeSessionSnapshot, int]]:
        """`read_session_sized` in two steps: the read is asked now, the call returned waits
        for its answer. Codex answers several reads at once, so a read-ahead keeps a few in
        flight instead of paying each one's round trip in turn (session 25)."""
        # Captured before the read: a prompt running when the read began is reported active.
        owned = native_session_id in self._owned_threads()
        pending = self._begin_call("thread/read", {"threadId": native_session_id, "includeTurns": True})

        def answer() -> tuple[NativeSessionSnapshot, int]:
            try:
                result, size = self._answer_sized("thread/read", pending)
                with_turns = True
            except RpcError as exc:
                # A paginated thread with no turn yet cannot list turns; it has nothing to list.
                if exc.rpc_code != -32601 or NO_TURNS_YET not in exc.message:
                    raise
                again = self._begin_call("thread/read", {"threadId": native_session_id, "includeTurns": False})
                result, size = self._answer_sized("thread/read", again)
                with_turns = False
            return snapshot_from_read(result, with_turns=with_turns, active_override=owned), size

        return answer

    def read_size_hint(self, summary: SessionSummary) -> int | None:
        """How large this session's read is, before it is made (a read-ahead reads a large one early)."""
        return rollout_bytes(summary)

    # -- commands --------------------------------------------------------------------

    def prompt(
        self,
        native_session_id: str,
        input: PromptInput,
        options: CommandExecutionOptions | None = None,
    ) -> CommandExecutionResult:
        options = options or CommandExecutionOptions()
        prompt = _Prompt()
        with self._lock:
            if native_session_id in self._prompts:
                # Codex folds a second turn/start into the running turn (same turn id), so
                # the two prompts' outcomes could not be told apart.
                return CommandExecutionResult.failure(
                    "needs-confirmation", "prompt-in-progress",
                    f"a prompt from this connector is still running on session {native_session_id}",
                )
            self._prompts[native_session_id] = prompt
        try:
            return self._run_prompt(native_session_id, input.text, prompt, options)
        finally:
            with self._lock:
                self._prompts.pop(native_session_id, None)

    def _run_prompt(
        self, thread_id: str, text: str, prompt: _Prompt, options: CommandExecutionOptions
    ) -> CommandExecutionResult:
        turn_params: dict[str, Any] = {
            "threadId": thread_id,
            "input": [{"type": "text", "text": text, "text_elements": []}],
        }
        if self.config.allow_danger_full_access:
            turn_params["approvalPolicy"] = "never"
            turn_params["sandboxPolicy"] = {"type": "dangerFullAccess"}
        try:
            # The process must load the thread before it can start a turn on it.
            self._transport.request("thread/resume", {"threadId": thread_id})
        except RpcError as exc:
            return CommandExecutionResult.failure("failed", "provider-error", exc.message)
        except TransportClosed as exc:  # no turn was asked for yet: provably not started
            return CommandExecutionResult.failure("failed", exc.code, exc.message, retryable=True)
        try:
            started = self._transport.request("turn/start", turn_params)
        except RpcError as exc:
            return CommandExecutionResult.failure("failed", "provider-error", exc.message)
        except TransportClosed as exc:
            return _closed(exc, "turn/start")
        turn = started.get("turn") if isinstance(started, dict) else None
        turn_id = turn.get("id") if isinstance(turn, dict) else None
        if not isinstance(turn_id, str):
            return CommandExecutionResult.failure(
                "unknown", "provider-error", "turn/start answered without a turn id"
            )
        with self._lock:
            prompt.turn_id = turn_id
        if options.on_cancellation_ready is not None:
            options.on_cancellation_ready()
        if options.on_session_active is not None:
            options.on_session_active()
        try:
            done = self._transport.wait_for_notification(
                lambda note: note.get("method") == "turn/completed"
                and note["params"]["threadId"] == thread_id
                and note["params"]["turn"]["id"] == turn_id
            )
        except TransportClosed as exc:
            result = _lost(exc, "the turn")
            result.provider_operation_id = turn_id
            return result
        final = done["params"]["turn"]
        status = final.get("status")
        details = {"turnId": turn_id, "status": status}
        if status == "completed":
            return CommandExecutionResult(status="succeeded", provider_operation_id=turn_id, result=details)
        error = final.get("error") if isinstance(final.get("error"), dict) else {}
        message = error.get("message") or f"turn {turn_id} ended {status}"
        return CommandExecutionResult(
            status="failed", provider_operation_id=turn_id, result=details,
            error=CommandError(code=f"turn-{status}", message=str(message)),
        )

    def cancel(self, native_session_id: str) -> CommandExecutionResult:
        with self._lock:
            prompt = self._prompts.get(native_session_id)
            turn_id = prompt.turn_id if prompt else None
        if turn_id is None:
            return CommandExecutionResult.failure(
                "failed", "no-active-turn",
                f"no turn started by this connector is running on session {native_session_id}",
            )
        failure = self._command_request("turn/interrupt", {"threadId": native_session_id, "turnId": turn_id})
        return failure or CommandExecutionResult(status="succeeded", provider_operation_id=turn_id)

    def rename_session(self, native_session_id: str, title: str) -> CommandExecutionResult:
        failure = self._command_request("thread/name/set", {"threadId": native_session_id, "name": title})
        return failure or CommandExecutionResult(status="succeeded", result={"title": title})

    # -- internals -------------------------------------------------------------------

    def _command_request(self, method: str, params: dict[str, Any]) -> CommandExecutionResult | None:
        """A command's one request: its failure as a result, or None when it succeeded."""
        try:
            self._transport.request(method, params)
        except RpcError as exc:
            return CommandExecutionResult.failure("failed", "provider-error", exc.message)
        except TransportClosed as exc:
            return _closed(exc, method)
        return None

    def _begin_call(self, method: str, params: dict[str, Any], *, keep_bytes: bool = False) -> PendingCall:
        """A collection call sent (watched for stalls), its answer taken by `_answer_sized`."""
        try:
            return self._transport.begin_request(method, params, stall_timeout=self.stall_timeout,
                                                 keep_bytes=keep_bytes)
        except TransportClosed as exc:
            raise self._with_hint(exc) from None

    def _answer_sized(self, method: str, pending: PendingCall) -> tuple[dict[str, Any], int]:
        """A collection call's answer and its bytes; its fault named with the setting to change."""
        try:
            result, size = pending.result_sized()
        except TransportClosed as exc:
            raise self._with_hint(exc) from None
        if not isinstance(result, dict):
            raise DriverError("provider-error", f"{method} answered with {type(result).__name__}, not an object")
        return result, size

    def _start_failure(self, exc: TransportClosed) -> DriverError:
        """A fault bound keeps its own code at start-up; anything else is `start-failed`."""
        if exc.code in FAULT_HINTS:
            return self._with_hint(exc)
        return DriverError("start-failed", exc.message, detail=exc.detail)

    def _with_hint(self, exc: TransportClosed) -> DriverError:
        hint = FAULT_HINTS.get(exc.code)
        if hint is None:
            return exc
        return exc.reworded(f"{exc.message} (source {self.source.id}; {hint} in [sources.{self.source.id}])")

    def _owned_threads(self) -> set[str]:
        with self._lock:
            return {thread for thread, prompt in self._prompts.items() if prompt.turn_id}

    def _answer_server_request(self, method: str, params: Any) -> Any:
        if method in DECLINES:
            return DECLINES[method]
        raise RpcError(-32601, f"{method} is not supported by agentctl")


def _lost(exc: TransportClosed, what: str) -> CommandExecutionResult:
    return CommandExecutionResult.failure(
        "unknown", "transport-lost",
        f"lost contact with codex app-server after sending {what}, so whether it took effect "
        f"is unknown: {exc.message}",
    )


def _closed(exc: TransportClosed, what: str) -> CommandExecutionResult:
    """A sent request may have taken effect (unknown); an unsent one did not (failed)."""
    if exc.sent:
        return _lost(exc, what)
    return CommandExecutionResult.failure("failed", exc.code, exc.message, retryable=True)


"""A blocking JSON-RPC 2.0 client over a child process's stdin and stdout.

One JSON object per message: a line (NDJSON) in `stdio` mode, a WebSocket text frame in
the proxy modes (see `websocket_pipe`). Request ids are increasing integers and `params`
is always sent (Codex rejects a request without it). Messages from the child are told
apart by shape: a `method` with an `id` is a server request (Codex numbers those from 0),
a `method` alone a notification, an `id` alone a response. The newest notifications are
retained, so a waiter registered after its notification arrived is still satisfied.

A request or wait ends when the child answers, when the caller's cancel signal fires, or
when the run ends; there is no elapsed-time limit. Two bounds keep a broken child from
hanging or exhausting its caller (see `child_output`): a message longer than
`max_line_bytes` ends the run (`line-too-long`) without being held whole, and a call made
with a `stall_timeout` (collection calls: start-up, inventory pages, reads; never a
prompt) during which nothing at all arrives from the child for that long ends the run
(`provider-stalled`). The child exiting, a malformed message, either bound, or `stop()`
rejects everything pending with a clear error, and a fault ends the child. No write can hang the transport
(see `child_input`): `stop()` gives up a write that waits on a child which stopped reading
and kills that child at once, and a request cancelled while its message is half-written
ends the run the same way (half a message cannot be taken back). stderr is drained into a
short tail; when the child fails, that tail is the error's `detail` (offered to `-v`),
never its message: errors carry agentctl's own words. Each `start()` begins a fresh run:
ids, pending calls and retained notifications of an earlier run are gone with it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from lib.drivers import child_process
from lib.drivers.base import CancelSignal
from lib.drivers.child_channels import (
    LineChannel,
    WebSocketChannel,
    drain_stderr,
    report_provider_output,
)
from lib.drivers.child_input import ChildInput, WriteCancelled
from lib.drivers.child_output import (
    LineTooLong,
    OutputMeter,
    Stalled,
    StallWatch,
    WebSocketError,
    size_text,
)
from lib.drivers.jsonrpc_messages import (
    Message,
    RpcError,
    TransportClosed,
    classify_message,
    parse_message,
    predicate_matches,
)
from lib.drivers.jsonrpc_run import Run, Slot, wait_for
from lib.types import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    import subprocess

Framing = Literal["lines", "websocket"]
ServerRequestHandler = Callable[[str, Any], Any]
NotificationListener = Callable[[Message], None]


class JsonRpcTransport:
    def __init__(
        self,
        *,
        name: str = "codex app-server",
        notification_limit: int = 500,
        on_server_request: ServerRequestHandler | None = None,
        on_notification: NotificationListener | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self.name = name
        self.notification_limit = notification_limit
        self.max_line_bytes = max_line_bytes
        self.on_server_request = on_server_request
        self.on_notification = on_notification
        self._run: Run | None = None

    # -- lifecycle -------------------------------------------------------------------

    def start(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        framing: Framing = "lines",
        signal: CancelSignal | None = None,
        stall_timeout: float | None = None,
        process: subprocess.Popen[bytes] | None = None,
        one_cpu: bool = False,
    ) -> None:
        """Spawn the child and open its channel; stops any earlier run first. With
        `stall_timeout`, a channel that opens with nothing from the child (a WebSocket
        upgrade never answered) for that long fails `provider-stalled`. `process`: a
        child already spawned as `child_process.spawn` spawns it, with this launch
        (one the idle fast path started early, lib/drivers/codex_early.py). `one_cpu`:
        the child is confined to one CPU (lib/drivers/one_cpu.py)."""
        self.stop()
        if process is None:
            process = child_process.spawn(argv, env, cwd, one_cpu=one_cpu)
        channel_class = WebSocketChannel if framing == "websocket" else LineChannel
        child_input = ChildInput(process.stdin)
        meter = OutputMeter(process.stdout)
        run = Run(process, child_input, meter, channel_class(meter, child_input, self.max_line_bytes),
                  self.name, self.notification_limit)
        self._run = run
        readers = ((drain_stderr, (process.stderr, run.stderr_tail)), (self._read_messages, (run,)))
        for target, args in readers:
            thread = threading.Thread(target=target, args=args, daemon=True, name=f"{self.name} reader")
            run.threads.append(thread)
            thread.start()
        watch = StallWatch(meter, stall_timeout) if stall_timeout is not None else None
        try:
            wait_for(run.opened.done, signal, watch)
        except Stalled as stalled:
            self._stalled(run, "the start", stalled)
        except BaseException:
            self.stop()
            raise
        if run.opened.error is not None:
            error = run.opened.error
            self.stop()
            raise error

    def stop(self) -> None:
        """End the current run: reject what is pending, close stdin, end the child and
        what it started (see `child_process`), and reap it.

        Never waits on a write: one waiting for a child that stopped reading is given up
        (it fails with `transport-stopped`) and that child is killed at once."""
        run, self._run = self._run, None
        if run is None:
            return
        run.fail(TransportClosed("transport-stopped", f"{self.name} was stopped"))
        hung = run.input.stop_waiting()
        try:
            run.channel.close()  # a WebSocket close frame goes out only if it fits
        except (OSError, ValueError, WebSocketError):
            pass
        run.input.close()
        # Closing stdin makes Codex exit within milliseconds; escalate only if it does not.
        # A child that is not reading will not see stdin close: it is killed straight away.
        # What the child started and left in its process group ends with it.
        child_process.end(run.process, hung=hung or run.input.abandoned)
        for thread in run.threads:
            if thread is not threading.current_thread():
                thread.join(timeout=5)
        for stream in (run.process.stdout, run.process.stderr):
            if stream is not None:
                stream.close()

    @property
    def running(self) -> bool:
        run = self._run
        return run is not None and run.failure is None

    @property
    def pid(self) -> int | None:
        return self._run.process.pid if self._run else None

    def stderr_tail(self) -> list[str]:
        run = self._run
        return list(run.stderr_tail) if run else []

    # -- calls -----------------------------------------------------------------------

    def request(self, method: str, params: Any = None, *, signal: CancelSignal | None = None,
                stall_timeout: float | None = None) -> Any:
        """Send a request and block until its result; raises RpcError or TransportClosed.

        With `stall_timeout`, the request fails with `provider-stalled` and the child is
        ended when nothing at all arrives from it for that many seconds while it waits (any
        message or part of one restarts the clock)."""
        return self.begin_request(method, params, signal=signal, stall_timeout=stall_timeout).result(signal)

    def request_sized(self, method: str, params: Any = None, *, signal: CancelSignal | None = None,
                      stall_timeout: float | None = None) -> tuple[Any, int]:
        """`request`, with the byte length of the response as it arrived (a read-ahead
        budgets the memory of the reads it holds by it)."""
        return self.begin_request(method, params, signal=signal, stall_timeout=stall_timeout).result_sized(signal)

    def begin_request(self, method: str, params: Any = None, *, signal: CancelSignal | None = None,
                      stall_timeout: float | None = None, keep_bytes: bool = False) -> PendingCall:
        """Send a request and return at once; its `result()` blocks until the answer. The
        child may answer other requests meanwhile (Codex serves several at once, in any
        order), so a caller can ask for the next page of a listing while it works on this
        one. The stall clock starts now: silence from the child while nobody waits counts.
        A request never waited for is dropped when its answer arrives. `keep_bytes`: its
        answer's bytes as received are kept too (`answer_bytes`)."""
        run = self._current()
        watch = StallWatch(run.meter, stall_timeout) if stall_timeout is not None else None
        slot = Slot()
        slot.keep_bytes = keep_bytes
        with run.lock:
            if run.failure is not None:
                raise run.failure.again()
            request_id = next(run.ids)
            run.pending[request_id] = slot
        message = {"jsonrpc": "2.0", "id": request_id, "method": method,
                   "params": {} if params is None else params}
        # Marked before writing: once the write begins the child may act on it, so a run
        # that ends from here on cannot prove the request did not take effect.
        slot.sent = True
        try:
            self._send(run, message, signal, sent=True)
        except (TransportClosed, WriteCancelled):
            with run.lock:
                run.pending.pop(request_id, None)
            raise
        return PendingCall(self, run, request_id, slot, method, watch)

    def notify(self, method: str, params: Any = None) -> None:
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(self._current(), message)

    def wait_for_notification(
        self, predicate: Callable[[Message], bool], *, signal: CancelSignal | None = None
    ) -> Message:
        """The first retained or future notification that `predicate` accepts."""
        run = self._current()
        slot = Slot(predicate)
        with run.lock:
            for message in run.retained:
                if predicate_matches(predicate, message):
                    return message
            if run.failure is not None:
                raise run.failure
            run.waiters.append(slot)
        try:
            wait_for(slot.done, signal)
        finally:
            with run.lock:
                if slot in run.waiters:
                    run.waiters.remove(slot)
        if slot.error is not None:
            raise slot.error
        return slot.value

    def retained_notifications(self) -> list[Message]:
        run = self._run
        if run is None:
            return []
        with run.lock:
            return list(run.retained)

    # -- internals -------------------------------------------------------------------

    def _current(self) -> Run:
        run = self._run
        if run is None:
            raise TransportClosed("transport-not-started", f"{self.name} is not running")
        return run

    def _send(self, run: Run, message: Message, signal: CancelSignal | None = None, *,
              sent: bool = False) -> None:
        text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
        try:
            with run.input.cancellable(signal):
                run.channel.send(text)
        except WriteCancelled as exc:
            if exc.cut_short:  # the child holds half a message: this run cannot go on
                run.fail(TransportClosed("transport-stopped", f"{self.name} was stopped: a request "
                                         "was cancelled in the middle of writing to it"))
                run.input.close()
                run.kill()
            raise
        except (OSError, ValueError, WebSocketError):
            # A closed pipe usually means the child is exiting: give the reader a moment to
            # see the exit, so the error names the child's own reason.
            run.ended.wait(2)
            failure = run.failure or TransportClosed(
                "transport-closed", f"{self.name} is not accepting input any more"
            )
            raise failure.again(sent=sent) from None

    def _read_messages(self, run: Run) -> None:
        try:
            run.channel.open()
        except (WebSocketError, OSError, ValueError) as exc:
            run.fail(run.exit_failure(f"the WebSocket upgrade failed ({exc})"))
            return
        run.opened.resolve()
        while run.failure is None:
            try:
                raw = run.channel.receive()
            except LineTooLong as exc:
                run.fail(TransportClosed("line-too-long", f"{self.name} sent a line longer than "
                                         f"{size_text(exc.limit)}; it was stopped"))
                run.kill()
                return
            except (WebSocketError, OSError, ValueError) as exc:
                if run.failure is None:
                    run.fail(TransportClosed("protocol-error", f"{self.name} broke the WebSocket protocol: {exc}"))
                    run.kill()
                return
            if raw is None:
                if run.failure is None:
                    run.fail(run.exit_failure(None))
                return
            message = parse_message(raw)
            kind = classify_message(message)
            if kind is None:
                shown = raw[:200].decode("utf-8", "replace").strip()
                what = "a malformed line" if message is None else "a message that is not JSON-RPC"
                report_provider_output(self.name, shown)
                run.fail(TransportClosed("protocol-error", f"{self.name} sent {what}; agentctl -v shows it",
                                         detail=shown))
                run.kill()
                return
            assert message is not None
            if kind == "response":
                run.deliver_response(message, len(raw), raw)
            elif kind == "request":
                threading.Thread(target=self._answer, args=(run, message), daemon=True).start()
            else:
                run.deliver_notification(message)
                listener = self.on_notification
                if listener is not None:
                    listener(message)

    def _answer(self, run: Run, message: Message) -> None:
        handler = self.on_server_request
        reply: Message = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            if handler is None:
                raise RpcError(-32601, f"{message['method']} is not supported by this client")
            reply["result"] = handler(message["method"], message.get("params"))
        except RpcError as exc:
            reply["error"] = {"code": exc.rpc_code if exc.rpc_code is not None else -32603,
                              "message": exc.message}
        except Exception:  # noqa: BLE001 - the child must get an answer whatever happened
            reply["error"] = {"code": -32603, "message": "the client failed to handle this request"}
        try:
            self._send(run, reply)
        except TransportClosed:
            pass

    def _stalled(self, run: Run, what: str, stalled: Stalled) -> None:
        """A watched call got nothing from the child in time: the run ends, the child too."""
        run.fail(TransportClosed("provider-stalled", f"{self.name} sent nothing for {stalled.seconds:g} s "
                                 f"while {what} waited for it; it was stopped"))
        run.kill()


class PendingCall:
    """A request sent by `JsonRpcTransport.begin_request`, its answer not yet taken."""

    def __init__(self, transport: JsonRpcTransport, run: Run, request_id: int, slot: Slot, method: str,
                 watch: StallWatch | None) -> None:
        self._transport = transport
        self._run = run
        self._id = request_id
        self._slot = slot
        self._method = method
        self._watch = watch

    def result(self, signal: CancelSignal | None = None) -> Any:
        """Block until the answer; raises RpcError or TransportClosed (`provider-stalled`
        when the child sent nothing for the stall timeout since the request was sent)."""
        run = self._run
        try:
            try:
                wait_for(self._slot.done, signal, self._watch)
            except Stalled as stalled:
                self._transport._stalled(run, self._method, stalled)  # rejects this request too
        finally:
            with run.lock:
                run.pending.pop(self._id, None)
        if self._slot.error is not None:
            raise self._slot.error
        return self._slot.value

    def result_sized(self, signal: CancelSignal | None = None) -> tuple[Any, int]:
        """`result`, with the byte length of the answer as it arrived."""
        value = self.result(signal)
        return value, self._slot.size

    def answer_bytes(self) -> bytes | None:
        """The answer's bytes as received, when the request kept them (`keep_bytes`)."""
        return self._slot.raw

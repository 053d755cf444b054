"""The state of one run of the JSON-RPC transport: one child process, its pending calls
and notification waits, where each message from the child goes, and how a run ends (every
pending call rejected with one failure).
"""

from __future__ import annotations

import collections
import itertools
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from lib.drivers import child_process
from lib.drivers.base import CancelSignal, DriverError
from lib.drivers.child_channels import (
    STDERR_TAIL_LINES,
    Channel,
    provider_output,
    report_provider_output,
)
from lib.drivers.child_input import ChildInput
from lib.drivers.child_output import OutputMeter, Stalled, StallWatch
from lib.drivers.jsonrpc_messages import Message, RpcError, TransportClosed, predicate_matches


class Slot:
    """Where one pending request or notification wait gets its outcome."""

    def __init__(self, predicate: Callable[[Message], bool] | None = None) -> None:
        self.predicate = predicate
        self.done = threading.Event()
        self.value: Any = None
        self.error: DriverError | None = None
        self.sent = False
        self.size = 0  # the response's bytes as received (what a read-ahead budgets by)
        self.keep_bytes = False  # keep the response's bytes as received (`raw`), for a caller that holds it
        self.raw: bytes | None = None

    def resolve(self, value: Any = None, error: DriverError | None = None) -> None:
        if not self.done.is_set():
            self.value, self.error = value, error
            self.done.set()


class Run:
    """The state of one child process: replaced whole by every start()."""

    def __init__(self, process: subprocess.Popen[bytes], child_input: ChildInput, meter: OutputMeter,
                 channel: Channel, name: str, limit: int):
        self.process = process
        self.input = child_input
        self.meter = meter  # when the child last sent anything (the stall clock)
        self.channel = channel
        self.name = name
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.pending: dict[int, Slot] = {}
        self.waiters: list[Slot] = []
        self.retained: collections.deque[Message] = collections.deque(maxlen=limit)
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self.failure: TransportClosed | None = None
        self.opened = Slot()
        self.ended = threading.Event()
        self.threads: list[threading.Thread] = []

    def fail(self, failure: TransportClosed) -> None:
        """End the run: every pending request and wait is rejected with `failure`."""
        with self.lock:
            if self.failure is not None:
                return
            self.failure = failure
            pending, self.pending = list(self.pending.values()), {}
            waiters, self.waiters = self.waiters, []
        self.ended.set()
        self.opened.resolve(error=failure)
        for slot in pending:
            slot.resolve(error=failure.again(sent=slot.sent))
        for slot in waiters:
            slot.resolve(error=failure)

    def deliver_response(self, message: Message, size: int = 0, raw: bytes | None = None) -> None:
        """A response (`size` bytes as received) resolves its pending request; one nobody
        waits for is dropped."""
        with self.lock:
            slot = self.pending.pop(message["id"], None) if isinstance(message["id"], int) else None
        if slot is None:
            return  # an answer nobody waits for (its caller was cancelled)
        slot.size = size
        if slot.keep_bytes:
            slot.raw = raw
        error = message.get("error")
        if error is not None:
            if not isinstance(error, dict):
                error = {"message": str(error)}
            code = error.get("code")
            slot.resolve(error=RpcError(code if isinstance(code, int) else None,
                                        str(error.get("message") or "unknown error"), error.get("data")))
        else:
            slot.resolve(message.get("result"))

    def deliver_notification(self, message: Message) -> None:
        """A notification is retained and satisfies every wait whose predicate accepts it."""
        with self.lock:
            self.retained.append(message)
            matched = [slot for slot in self.waiters if predicate_matches(slot.predicate, message)]
            for slot in matched:
                self.waiters.remove(slot)
        for slot in matched:
            slot.resolve(message)

    def exit_failure(self, context: str | None) -> TransportClosed:
        """The failure of a child that ended on its own: its exit code, and its last words
        as the error's `detail` (they can hold a key: never the message, a record or the
        store; `-v` shows them). What it left in its process group is ended first."""
        code = None
        if child_process.exits_within(self.process, child_process.GRACE_SECONDS):
            child_process.kill_group(self.process)
            try:
                code = self.process.wait(timeout=child_process.GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        stderr_thread = self.threads[0]
        if stderr_thread is not threading.current_thread():
            stderr_thread.join(timeout=2)  # its last lines usually hold the reason
        what = f"{self.name} exited" + (f" with code {code}" if code is not None else "")
        if code is None:
            what = f"{self.name} closed its output"
        detail = provider_output(list(self.stderr_tail))
        report_provider_output(self.name, detail)
        text = what + (f": {context}" if context else "")
        if detail:
            text += "; agentctl -v shows what it wrote"
        return TransportClosed("transport-closed", text, detail=detail)

    def kill(self) -> None:
        """After a protocol fault, either fault bound, or half a message written, the stream
        cannot be trusted: the child is ended, with what it started (it is reaped by stop())."""
        child_process.kill_group(self.process)


TICK_SECONDS = 0.05  # how often a wait looks at its cancel signal


def wait_for(event: threading.Event, signal: CancelSignal | None, watch: StallWatch | None = None) -> None:
    """Block until `event` is set; a fired `signal` raises Cancelled instead, and a `watch`
    that runs out (nothing arrived from the child for its seconds) raises Stalled."""
    if signal is None and watch is None:
        event.wait()
        return
    while True:
        timeout = TICK_SECONDS if watch is None else max(watch.remaining(), 0.0)
        if signal is not None:
            timeout = min(timeout, TICK_SECONDS)
        if event.wait(timeout):
            return
        if signal is not None:
            signal.raise_if_cancelled()
        if watch is not None and watch.remaining() <= 0:
            raise Stalled(watch.seconds)

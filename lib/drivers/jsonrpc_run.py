"""The state of one run of the JSON-RPC transport: one child process, its pending calls
and notification waits, and how a run ends (every pending call rejected with one failure).
"""

from __future__ import annotations

import collections
import itertools
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from lib.drivers.base import CancelSignal, DriverError
from lib.drivers.child_channels import STDERR_TAIL_LINES, Channel
from lib.drivers.child_input import ChildInput
from lib.drivers.jsonrpc_messages import Message, TransportClosed


class Slot:
    """Where one pending request or notification wait gets its outcome."""

    def __init__(self, predicate: Callable[[Message], bool] | None = None) -> None:
        self.predicate = predicate
        self.done = threading.Event()
        self.value: Any = None
        self.error: DriverError | None = None
        self.sent = False

    def resolve(self, value: Any = None, error: DriverError | None = None) -> None:
        if not self.done.is_set():
            self.value, self.error = value, error
            self.done.set()


class Run:
    """The state of one child process: replaced whole by every start()."""

    def __init__(self, process: subprocess.Popen[bytes], child_input: ChildInput, channel: Channel,
                 name: str, limit: int):
        self.process = process
        self.input = child_input
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


def wait_for(event: threading.Event, signal: CancelSignal | None) -> None:
    """Block until `event` is set; a fired `signal` raises Cancelled instead."""
    if signal is None:
        event.wait()
        return
    while not event.wait(0.05):
        signal.raise_if_cancelled()

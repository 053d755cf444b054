"""The child's stdin, written so that no write can hang whoever shuts the child down.

A child that stops reading fills its stdin pipe, and a plain blocking write then waits in
the kernel for as long as the child lives, holding every lock taken around it (a
`BufferedWriter` holds its own, so even closing the stream waits for it). Here the pipe is
non-blocking: a write that finds the pipe full waits for room in short polls, and gives up
as soon as

- `stop_waiting()` or `close()` was called: it fails like a closed pipe
  (`BrokenPipeError`), and so does every later write that would have to wait;
- the writing thread's cancel signal fired (see `cancellable`): it raises
  `WriteCancelled`, which says whether part of the message had already gone out.

Writes are serialised here (whole messages, in order). The file descriptor is closed by
`close()`, or, when a write is still inside it, by the last write to leave.
"""

from __future__ import annotations

import errno
import os
import select
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lib.drivers.base import Cancelled, CancelSignal

TICK_SECONDS = 0.05  # how often a waiting write looks at its signal and at stop_waiting()


class WriteCancelled(Cancelled):
    """The writing thread's cancel signal fired while its write waited for room.

    `cut_short` is True when part of the message had already been written: the child's
    input then holds half a message, and the stream cannot be used any more.
    """

    def __init__(self, message: str, *, cut_short: bool) -> None:
        super().__init__(message)
        self.cut_short = cut_short


class ChildInput:
    """A write-only, non-blocking view of `stream` (the child's stdin, a pipe)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._fd: int = stream.fileno()
        os.set_blocking(self._fd, False)
        self._write_lock = threading.Lock()  # one message at a time
        self._state = threading.Lock()  # the fields below; never held across a wait
        self._writers = 0  # threads inside write()
        self._waiting = 0  # of those, the ones waiting for room in the pipe
        self._abandoned = False  # a write was given up because the pipe stayed full
        self._closing = False
        self._closed = False
        self._no_waiting = threading.Event()
        self._local = threading.local()
        # Set while a write waits for room: the pipe is full (for tests and diagnostics).
        self.waiting_for_room = threading.Event()

    @contextmanager
    def cancellable(self, signal: CancelSignal | None) -> Iterator[None]:
        """Writes made by this thread inside the block give up when `signal` fires."""
        self._local.signal = signal
        try:
            yield
        finally:
            self._local.signal = None

    def write(self, data: bytes) -> None:
        signal: CancelSignal | None = getattr(self._local, "signal", None)
        with self._state:
            if self._closing:
                raise BrokenPipeError(errno.EPIPE, "the child's input is closed")
            self._writers += 1
        try:
            self._acquire(signal)
            try:
                self._write_all(memoryview(data), signal)
            finally:
                self._write_lock.release()
        finally:
            with self._state:
                self._writers -= 1
                last_out = self._closing and self._writers == 0 and not self._closed
                self._closed = self._closed or last_out
            if last_out:
                self._close_stream()

    def flush(self) -> None:
        """Nothing is buffered: every write goes straight to the pipe."""

    def stop_waiting(self) -> bool:
        """From now on a write that has to wait for room fails instead, and so does the one
        waiting now. True when the child has shown it is not reading: a write is waiting for
        room now, or one was given up for it before."""
        with self._state:
            hung = self._waiting > 0 or self._abandoned
        self._no_waiting.set()
        return hung

    @property
    def abandoned(self) -> bool:
        """A write was given up because the pipe stayed full (the child is not reading)."""
        return self._abandoned

    def close(self) -> None:
        """No more writes; the pipe is closed now, or by the last write still inside."""
        self._no_waiting.set()
        with self._state:
            self._closing = True
            now = self._writers == 0 and not self._closed
            self._closed = self._closed or now
        if now:
            self._close_stream()

    # -- internals -------------------------------------------------------------------

    def _acquire(self, signal: CancelSignal | None) -> None:
        if self._write_lock.acquire(blocking=False):
            return
        while True:  # another write holds the pipe: waiting behind it is waiting for room too
            self._give_up_if_asked(signal, cut_short=False)
            if self._write_lock.acquire(timeout=TICK_SECONDS):
                return

    def _write_all(self, view: memoryview, signal: CancelSignal | None) -> None:
        total = len(view)
        while view:
            try:
                view = view[os.write(self._fd, view):]
            except BlockingIOError:
                self._wait_for_room(signal, cut_short=len(view) < total)

    def _wait_for_room(self, signal: CancelSignal | None, *, cut_short: bool) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        with self._state:
            self._waiting += 1
            self.waiting_for_room.set()
        try:
            # POLLERR (the child closed its end) also ends the wait: the next write fails.
            while True:
                self._give_up_if_asked(signal, cut_short=cut_short, full=True)
                if poller.poll(int(TICK_SECONDS * 1000)):
                    return
        finally:
            with self._state:
                self._waiting -= 1
                if self._waiting == 0:
                    self.waiting_for_room.clear()

    def _give_up_if_asked(self, signal: CancelSignal | None, *, cut_short: bool, full: bool = False) -> None:
        stopped = self._no_waiting.is_set()
        cancelled = signal is not None and signal.cancelled
        if full and (stopped or cancelled):
            with self._state:
                self._abandoned = True
        if stopped:
            raise BrokenPipeError(errno.EPIPE, "the write to the child was given up: the child is not reading")
        if cancelled:
            raise WriteCancelled("cancelled while writing to the child, which is not reading its input",
                                 cut_short=cut_short)

    def _close_stream(self) -> None:
        try:
            self._stream.close()
        except (OSError, ValueError):
            pass

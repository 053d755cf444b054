"""The read-ahead's worker: one thread that runs the queued reads in order, a few in
flight at once when the driver can ask for a read before it waits for the answer.

A read is two steps (`PendingRead.begin`, `PendingRead.finish`): the request sent, then
its answer waited for and made a snapshot. A driver with `begin_read_session_sized` (the
Codex driver) sends a read at once and answers it later; any other driver does the whole
read in the second step. One at a time, each read waited a round trip that neither side
worked in: the answer crossing the pipe, our reader thread and this one getting the GIL
back from the main thread (session 25: 6.4 ms a small read on the 300-thread home; a
bare client with four reads in flight had Codex answer that home's 300 reads in 1.1-1.3 s
against 2.5-2.7 s one at a time). So the worker keeps up to `WINDOW` reads in flight, all
asked before the oldest is waited for, and hands their answers over in order.

Memory stays within the read-ahead's byte budget: a read begins beside others only when
its size is told beforehand (the driver's `read_size_hint`: for Codex the rollout file,
larger than its answer) and the answers held plus those told sizes stay under the
budget; a read of unknown size (or of a driver that cannot send ahead) runs alone, as
before, once the answers held leave room.
"""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable
from typing import Any

from lib.drivers.base import AgentDriver
from lib.types import NativeSessionSnapshot

WINDOW = 4  # reads in flight at once: 4 answered the 300-thread home's reads as fast as 8 (session 25)

Answer = Callable[[], tuple[NativeSessionSnapshot, int]]  # waits for a read's answer: (snapshot, its bytes)
_STOP = object()


class PendingRead:
    """One provider read: begun (the request sent), then finished (its answer taken)."""

    def __init__(self, source_id: str, session_id: str, begin: Callable[[], Answer], *,
                 told_size: int | None = None) -> None:
        self.source_id = source_id
        self.session_id = session_id
        self.told_size = told_size  # the size the driver told before the read: it may be in flight with others
        self.size = 0  # the answer's bytes, once read
        self.dropped = False  # taken, or the read stage will not take it: not begun, or let go
        self.counted = False  # its answer counts against the budget (read, not yet let go)
        self.early = False  # read on its own thread, outside the budget (a large session)
        self._begin: Callable[[], Answer] | None = begin
        self._answer: Answer | None = None
        self._result: NativeSessionSnapshot | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()

    def begin(self) -> None:
        """Ask for the read (a failure to ask is kept for `result`)."""
        try:
            assert self._begin is not None
            self._answer = self._begin()
        except BaseException as exc:  # noqa: BLE001 -- re-raised where the read is taken
            self._error = exc
        self._begin = None

    def finish(self) -> None:
        """Wait for the answer (after `begin`)."""
        try:
            if self._answer is not None:
                self._result, self.size = self._answer()
        except BaseException as exc:  # noqa: BLE001 -- re-raised where the read is taken
            self._error = exc
        self._answer = None
        self._done.set()

    def run(self) -> None:
        self.begin()
        self.finish()

    def skip(self) -> None:
        self._begin = self._answer = None
        self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self) -> None:
        self._done.wait()

    def result(self) -> NativeSessionSnapshot:
        self._done.wait()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        result, self._result = self._result, None
        assert result is not None
        return result


def read_steps(driver: AgentDriver, session_id: str, budget: int) -> tuple[Callable[[], Answer], bool]:
    """(the read of one session as its first step, whether that step only sends it). A
    driver that cannot tell its answers' sizes counts each read as the whole budget."""
    begin: Any = getattr(driver, "begin_read_session_sized", None)
    if begin is not None:
        return lambda: begin(session_id), True
    sized: Any = getattr(driver, "read_session_sized", None)
    if sized is None:
        return lambda: lambda: (driver.read_session(session_id), budget), False
    return lambda: lambda: sized(session_id), False


class ReadWorker:
    """Runs the queued reads in order, for a whole sync, each begun as soon as the budget
    and the window allow. Starting a thread per session cost more than the read on a
    loaded machine (the starter waits for the new thread to get the GIL)."""

    def __init__(self, budget: int, window: int = WINDOW) -> None:
        self._budget = budget
        self._window = max(window, 1)
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._room = threading.Condition()
        self._held = 0  # bytes of answers read and not yet taken
        self._stopped = False
        self._in_flight: collections.deque[PendingRead] = collections.deque()  # begun, not finished, in order
        self._next: PendingRead | None = None  # queued, held back until the reads in flight are finished
        # Set while the next read waits for the held answers to be taken (for tests and diagnostics).
        self.waiting_for_room = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="read-ahead")
        self._thread.start()

    def submit(self, job: PendingRead) -> None:
        self._jobs.put(job)

    def release(self, job: PendingRead) -> None:
        """`job` was taken or dropped: its answer no longer counts against the budget."""
        with self._room:
            if job.counted:
                self._held -= job.size
                job.counted = False
            job.dropped = True
            self._room.notify_all()

    def stop(self) -> None:
        """The thread ends after the step it is in (if any); it is not waited for."""
        with self._room:
            self._stopped = True
            self._room.notify_all()
        self._jobs.put(_STOP)

    # -- the thread -------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            job = self._following()
            if job is _STOP:
                for begun in self._in_flight:
                    begun.skip()  # its answer is dropped when it comes
                return
            if job is not None:
                if self._may_begin(job):
                    job.begin()
                    self._in_flight.append(job)
                    continue
                if job.done:
                    continue  # dropped before it began: skipped
                self._next = job  # it begins once the reads in flight are finished
            self._finish(self._in_flight.popleft())

    def _following(self) -> Any:
        """The next job: the one held back, else the queue's (waited for only when no read
        is in flight: otherwise None, and the oldest read in flight is finished)."""
        if self._next is not None:
            job, self._next = self._next, None
            return job
        if self._in_flight:
            try:
                return self._jobs.get_nowait()
            except queue.Empty:
                return None
        return self._jobs.get()

    def _may_begin(self, job: PendingRead) -> bool:
        """Whether `job` begins now: alone once the answers held leave room in the budget
        (skipped if dropped meanwhile); beside reads in flight only when it and they have
        told sizes, within the window and the budget."""
        with self._room:
            if job.dropped or self._stopped:
                job.skip()
                return False
            if self._in_flight:
                if job.told_size is None or len(self._in_flight) >= self._window:
                    return False
                if any(begun.told_size is None for begun in self._in_flight):
                    return False
                told = sum(begun.told_size or 0 for begun in self._in_flight) + job.told_size
                return self._held + told < self._budget
            while self._held >= self._budget and not job.dropped and not self._stopped:
                self.waiting_for_room.set()
                self._room.wait()
            self.waiting_for_room.clear()
            if job.dropped or self._stopped:
                job.skip()
                return False
            return True

    def _finish(self, job: PendingRead) -> None:
        job.finish()
        with self._room:
            if not job.dropped:
                job.counted = True
                self._held += job.size

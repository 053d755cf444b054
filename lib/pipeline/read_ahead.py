"""Read-ahead: the next session is read from the provider while this one is prepared
and published, one session ahead and no more.

`sync` feeds its inventory records through `ReadAhead.feed`, which looks one record
ahead: while a `summary` record goes down the stages, the next `summary` of the same
source is known. When the read stage has taken a summary (read or retained it), it
calls `start_next`, which starts reading that next session on the read-ahead's one
worker thread, unless the retain rule will keep it unread. The read stage's next read of that very
session takes the result (or the provider's failure, raised where a direct read would
have raised it); a read of any other session first waits the pending one out and drops
it, so at most one provider read is in flight and at most one snapshot waits. Memory
is bounded by two sessions instead of one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator

from pydantic import ValidationError

from lib.drivers.base import AgentDriver
from lib.pipeline.records import Item, SummaryItem, data_of, kind_of
from lib.types import NativeSessionSnapshot, SessionSummary, normalize_source_id

_END = object()


class _PendingRead:
    """One provider read, run by the read-ahead's worker thread."""

    def __init__(self, source_id: str, session_id: str, call: Callable[[], NativeSessionSnapshot]) -> None:
        self.source_id = source_id
        self.session_id = session_id
        self._call: Callable[[], NativeSessionSnapshot] | None = call
        self._result: NativeSessionSnapshot | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()

    def run(self) -> None:
        try:
            assert self._call is not None
            self._result = self._call()
        except BaseException as exc:  # noqa: BLE001 -- re-raised where the read is taken
            self._error = exc
        self._call = None
        self._done.set()

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


class _Worker:
    """One thread that runs the reads begun ahead, one at a time, for a whole sync.
    Starting a thread per session cost more than the read on a loaded machine (the
    starter waits for the new thread to get the GIL)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_PendingRead | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, daemon=True, name="read-ahead")
        self._thread.start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            job.run()

    def submit(self, job: _PendingRead) -> None:
        self._jobs.put(job)

    def stop(self) -> None:
        """The thread ends after the job it runs (if any); it is not waited for."""
        self._jobs.put(None)


class ReadAhead:
    def __init__(self) -> None:
        self._upcoming: Item | None = None  # the next item when it is a summary
        self._pending: _PendingRead | None = None
        self._worker: _Worker | None = None
        self.started = 0  # reads begun ahead (for tests and the bench)
        self.used = 0  # of which the read stage took the result

    def feed(self, items: Iterable[Item]) -> Iterator[Item]:
        """`items` unchanged, pulled one ahead so the next summary is known."""
        iterator = iter(items)
        current = next(iterator, _END)
        while current is not _END:
            following = next(iterator, _END)
            self._upcoming = following if following is not _END and kind_of(following) == "summary" else None
            yield current
            current = following
        self._upcoming = None

    def start_next(self, source_id: str, driver: AgentDriver, will_read: Callable[[SessionSummary], bool]) -> None:
        """Begin reading the upcoming summary's session when it belongs to `source_id`
        and `will_read` says the read stage will read it."""
        upcoming, self._upcoming = self._upcoming, None
        if upcoming is None or self._pending is not None:
            return
        if isinstance(upcoming, SummaryItem):  # listed in this process: its model as it is
            upcoming_source, summary = upcoming.source_id, upcoming.summary
        else:
            data = data_of(upcoming)
            upcoming_source = str(data.get("sourceId", ""))
            try:
                summary = SessionSummary.model_validate(data.get("summary"))
            except ValidationError:
                return  # the read stage reports it
        if normalize_source_id(upcoming_source) != source_id:
            return
        if not will_read(summary):
            return
        session_id = summary.native_session_id
        self._pending = _PendingRead(source_id, session_id, lambda: driver.read_session(session_id))
        if self._worker is None:
            self._worker = _Worker()
        self._worker.submit(self._pending)
        self.started += 1

    def reader(self, source_id: str, driver: AgentDriver) -> _Reader:
        return _Reader(self, source_id, driver)

    def take(self, source_id: str, session_id: str) -> NativeSessionSnapshot | None:
        """The read begun ahead for this session (its failure raised), or None after
        waiting out and dropping a read of another one."""
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        if (pending.source_id, pending.session_id) != (source_id, session_id):
            pending.wait()
            return None
        self.used += 1
        return pending.result()

    def close(self) -> None:
        """Let a pending read finish (it ends when its driver stops); its result is dropped."""
        self._pending = None
        self._upcoming = None
        if self._worker is not None:
            self._worker.stop()
            self._worker = None


class _Reader:
    """The driver as the read stage's reads see it: a read begun ahead is taken first."""

    def __init__(self, ahead: ReadAhead, source_id: str, driver: AgentDriver) -> None:
        self._ahead = ahead
        self._source_id = source_id
        self._driver = driver

    def read_session(self, native_session_id: str) -> NativeSessionSnapshot:
        snapshot = self._ahead.take(self._source_id, native_session_id)
        if snapshot is None:
            snapshot = self._driver.read_session(native_session_id)
        return snapshot

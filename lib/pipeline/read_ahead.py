"""Read-ahead: the next sessions are read from the provider while this one is prepared
and published, a few sessions ahead (a few reads in flight at once where the driver can
ask ahead), within a byte budget.

`sync` feeds its inventory records through `ReadAhead.feed`, which looks up to `DEPTH`
records ahead. When the read stage has taken a summary (read or retained it), it calls
`start_next`, which queues reads of the upcoming summaries of the same source that the
retain rule will not keep unread, up to `DEPTH` reads not yet taken. The read-ahead's one
worker thread (read_worker.py) runs them in order, each as soon as the budget allows (not
when the read stage takes it; since session 25 a few at once where the driver can ask
for a read before it waits for it): a long stretch of work on the main thread (a batch
of sessions committed, the garbage collector) no longer leaves the provider idle, and
the short sessions after it find their reads done (session 22: with one read ahead, the
main thread waited for reads 9.5 s of a 33 s first sync of 3,000 threads while the worker
was idle 58% of it).

The read stage's read of a queued session takes its result (or the provider's failure,
raised where a direct read would have raised it); a read of any other session first
drops every queued read (waiting out the one running), so the order of reads and their
errors stay the read stage's.

Memory: a read begins alone only while the answers held (read and not yet taken) total
less than `BYTE_BUDGET` bytes as the provider sent them, and beside others only when
its size and theirs are told beforehand and fit the budget with the answers held
(`read_session_sized`; a driver that cannot tell counts each read as the whole budget,
so it reads one session ahead, as before). At most `DEPTH` sessions wait, and the held
answers are at most the budget plus one session (the last one begun alone under it):
with large sessions this is the two sessions it always was, plus the budget.

A large session is read early (session 24). Codex takes about half a second for a
thread of 38 MB, which one read 32 sessions ahead cannot hide: the main thread waited for
most of it. A driver that can tell how large a session's read will be before it is made
(`read_size_hint`: the Codex driver gives the size of the rollout file) has the first
session of at least `EARLY_BYTES` among the next `HORIZON` records read at once on a
thread of its own, beside the reads in order (Codex answers both at once), so its answer
is ready when the read stage comes to it. One such read at a time, and the next begins
only once the read stage has taken the session after the one read early (that one is
published by then): the memory bound above gains at most one large session, never while
another large session read early is held or being published. A large session that
cannot be read early holds the reads in order back until it can be.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable, Iterator

from pydantic import ValidationError

from lib.drivers.base import AgentDriver
from lib.pipeline.read_worker import WINDOW, PendingRead, ReadWorker, read_steps
from lib.pipeline.records import Item, SummaryItem, data_of, kind_of
from lib.types import NativeSessionSnapshot, SessionSummary, normalize_source_id

DEPTH = 32  # sessions read ahead and not yet taken (the one being read included): see docs/store-size-and-speed.md, session 22
BYTE_BUDGET = 4 << 20  # provider answer bytes held ahead before another read begins
HORIZON = 256  # records looked at ahead for a large session to read early
EARLY_BYTES = 4 << 20  # a session whose read_size_hint is at least this is read early
_WIDEN = 2  # records the look-ahead widens by per record yielded, past DEPTH (so no first read waits for many pages)
_END = object()


class ReadAhead:
    def __init__(self, *, depth: int = DEPTH, budget: int = BYTE_BUDGET, horizon: int = HORIZON,
                 early_bytes: int = EARLY_BYTES, window: int = WINDOW) -> None:
        self.depth = depth
        self.window = window
        self.budget = budget
        self.horizon = max(horizon, depth + 1)
        self.early_bytes = early_bytes
        self._window: collections.deque[Item] = collections.deque()  # items fed ahead, not yet yielded
        self._considered = 0  # of the window's items, those start_next has looked at
        self._scanned = 0  # of the window's items, those looked at for a large session to read early
        self._pending: collections.deque[PendingRead] = collections.deque()  # queued reads, in order
        self._worker: ReadWorker | None = None
        self._early: PendingRead | None = None  # the large session read early, not yet taken
        self._early_taken = False  # the last take was the early read: its session may be being published
        self._sizes: dict[str, int | None] = {}  # read_size_hint's answers, kept from the scan to the queue
        self.started = 0  # reads begun ahead (for tests and the bench)
        self.used = 0  # of which the read stage took the result
        self.most_pending = 0  # the most reads queued and not taken at once (for tests and the bench)
        self.early_started = 0  # of the reads begun ahead, those of large sessions read early

    def feed(self, items: Iterable[Item]) -> Iterator[Item]:
        """`items` unchanged, pulled up to `depth` ahead so the next summaries are known,
        and then a little further with each record yielded, up to `horizon` ahead."""
        iterator = iter(items)
        reach = self.depth + 1
        while True:
            while len(self._window) < reach:
                following = next(iterator, _END)
                if following is _END:
                    break
                self._window.append(following)
            if not self._window:
                return
            current = self._window.popleft()
            self._considered = max(self._considered - 1, 0)
            self._scanned = max(self._scanned - 1, 0)
            reach = min(reach + _WIDEN, self.horizon)
            yield current

    def start_next(self, source_id: str, driver: AgentDriver, will_read: Callable[[SessionSummary], bool]) -> None:
        """Queue reads of the upcoming summaries that belong to `source_id` and that
        `will_read` says the read stage will read, up to `depth` reads not yet taken, and
        begin the read of a large session further ahead early. A summary of another
        source (or a record that ends the listing) stops the queue."""
        hint = getattr(driver, "read_size_hint", None)
        while len(self._pending) < self.depth and self._considered < len(self._window):
            upcoming = self._window[self._considered]
            if kind_of(upcoming) != "summary":
                self._considered += 1
                continue  # a record the read stage passes through
            summary = self._summary_of(upcoming)
            if summary is None or summary[0] != source_id:
                # another source's summary waits for that source's reads; an invalid one
                # (reported by the read stage) stops the queue too, as a direct read would
                return
            if will_read(summary[1]):  # else retained: the read stage will not read it
                session_id = summary[1].native_session_id
                early = self._early
                size = self._size(hint, summary[1])
                if early is None or (early.source_id, early.session_id) != (source_id, session_id):
                    if size is not None and size >= self.early_bytes:
                        early = self._begin_early(source_id, session_id, driver)
                        if early is None:
                            return  # it waits for the large session read early before it
                    else:
                        early = None
                if early is not None:
                    self._pending.append(early)  # in its place among the reads in order
                else:
                    self._queue(source_id, session_id, driver, size)
            self._considered += 1
        self._look_for_large(source_id, driver, will_read, hint)

    def waiting_for_room(self) -> threading.Event | None:
        """Set while the next read waits for held answers to be taken (None before any read)."""
        return self._worker.waiting_for_room if self._worker is not None else None

    def reader(self, source_id: str, driver: AgentDriver) -> _Reader:
        return _Reader(self, source_id, driver)

    def take(self, source_id: str, session_id: str) -> NativeSessionSnapshot | None:
        """The read queued (or begun early) for this session (its failure raised), or None
        after dropping every queued read (a read of another session comes first: the
        order is the read stage's)."""
        self._early_taken = False  # the session taken before this one is published by now
        wanted = (source_id, session_id)
        early = self._early
        if self._pending and (self._pending[0].source_id, self._pending[0].session_id) == wanted:
            pending = self._pending.popleft()
        elif early is not None and (early.source_id, early.session_id) == wanted:
            self._drop_all(keep=early)  # the reads queued before it will not be taken
            pending = early
        else:
            if self._pending or early is not None:
                self._drop_all()
            return None
        self.used += 1
        if pending.early:
            self._early, self._early_taken = None, True
        try:
            return pending.result()
        finally:
            if not pending.early:
                assert self._worker is not None
                self._worker.release(pending)

    def close(self) -> None:
        """Drop the queued reads; one that runs finishes (it ends when its driver stops)
        and its result is dropped."""
        self._drop_all(wait=False)
        self._window.clear()
        self._considered = self._scanned = 0
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    # -- internals --------------------------------------------------------------------

    @staticmethod
    def _summary_of(item: Item) -> tuple[str, SessionSummary] | None:
        """(normalized source id, summary) of a summary item; None when it is invalid."""
        if isinstance(item, SummaryItem):  # listed in this process: its model as it is
            return normalize_source_id(item.source_id), item.summary
        data = data_of(item)
        try:
            summary = SessionSummary.model_validate(data.get("summary"))
        except ValidationError:
            return None  # the read stage reports it
        return normalize_source_id(str(data.get("sourceId", ""))), summary

    def _size(self, hint: Callable[[SessionSummary], int | None] | None, summary: SessionSummary, *,
              keep: bool = False) -> int | None:
        """How large the driver tells this session's read is (None: it cannot tell), asked
        once per session: the scan ahead keeps what it was told for the queue, which takes it."""
        if hint is None:
            return None
        session_id = summary.native_session_id
        if session_id in self._sizes:
            return self._sizes[session_id] if keep else self._sizes.pop(session_id)
        size = hint(summary)
        if keep:
            self._sizes[session_id] = size
        return size

    def _look_for_large(self, source_id: str, driver: AgentDriver, will_read: Callable[[SessionSummary], bool],
                        hint: Callable[[SessionSummary], int | None] | None) -> None:
        """Begin the read of the first large session past the reads queued, within the
        horizon, when no other large session read early is held or being published."""
        if hint is None:
            return
        self._scanned = max(self._scanned, self._considered)
        while self._scanned < len(self._window) and self._early is None and not self._early_taken:
            upcoming = self._window[self._scanned]
            if kind_of(upcoming) == "summary":
                summary = self._summary_of(upcoming)
                if summary is None or summary[0] != source_id:
                    return  # as for the reads in order: nothing past another source's summary
                size = self._size(hint, summary[1], keep=True) if will_read(summary[1]) else None
                if size is not None and size >= self.early_bytes:
                    self._begin_early(source_id, summary[1].native_session_id, driver)
            self._scanned += 1

    def _begin_early(self, source_id: str, session_id: str, driver: AgentDriver) -> PendingRead | None:
        """The read of a large session begun on a thread of its own (None while another
        large session read early is held or being published)."""
        if self._early is not None or self._early_taken:
            return None
        pending = PendingRead(source_id, session_id, read_steps(driver, session_id, self.budget)[0])
        pending.early = True
        self._early = pending
        threading.Thread(target=pending.run, daemon=True, name="read-early").start()
        self.started += 1
        self.early_started += 1
        return pending

    def _queue(self, source_id: str, session_id: str, driver: AgentDriver, size: int | None) -> None:
        begin, sends_only = read_steps(driver, session_id, self.budget)
        # a read whose size is told beforehand may be in flight beside others (read_worker.py)
        pending = PendingRead(source_id, session_id, begin, told_size=size if sends_only else None)
        if self._worker is None:
            self._worker = ReadWorker(self.budget, self.window)
        self._pending.append(pending)
        self._worker.submit(pending)
        self.started += 1
        self.most_pending = max(self.most_pending, len(self._pending))

    def _drop_all(self, *, wait: bool = True, keep: PendingRead | None = None) -> None:
        """Drop the queued reads and the one begun early (unless it is `keep`)."""
        pending, self._pending = self._pending, collections.deque()
        for job in pending:
            if job.early:
                continue  # not the worker's: let go below
            if self._worker is not None:
                self._worker.release(job)
            if wait and job.done is False:
                job.wait()  # the one running ends; the rest are skipped, not begun
        if self._early is not None and self._early is not keep:
            self._early.dropped = True  # its thread ends with its read; the answer goes with it
            self._early = None
        self._considered = self._scanned = len(self._window)  # what was looked at is not queued again
        self._sizes.clear()


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

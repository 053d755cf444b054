"""Started drivers by source id, shared by the stages of one run and kept by its owner.

The pool belongs to whoever runs the stages (a command, `sync`, a host), not to a
stage: stages only borrow drivers, so a host can keep its drivers between cycles and
closes the pool when it stops.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from lib.drivers.base import AgentDriver, DriverError


class _EarlyStart:
    """One driver being made and started on a thread of its own (`DriverPool.start_early`)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.outcome: AgentDriver | DriverError | BaseException | None = None


class _Closing:
    """`DriverPool.close` running on a thread of its own (`close_in_background`)."""

    def __init__(self, close: Callable[[], None]) -> None:
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(close,), daemon=True, name="stop of the providers")
        self._thread.start()

    def _run(self, close: Callable[[], None]) -> None:
        try:
            close()
        except BaseException as exc:  # noqa: BLE001 -- raised by `wait`, on the caller's thread
            self.failure = exc

    def wait(self) -> None:
        self._thread.join()
        if self.failure is not None:
            raise self.failure


class DriverPool:
    """A source whose driver cannot be created or started is remembered as its error, so
    every session of that source reports the same reason without retrying the start."""

    def __init__(self, factory: Callable[[str], AgentDriver]) -> None:
        self._factory = factory
        self._drivers: dict[str, AgentDriver | DriverError] = {}
        self._early: dict[str, _EarlyStart] = {}
        self._lock = threading.Lock()  # the stopped flag, against an early start finishing
        self._stopped = False
        self._closing: _Closing | None = None

    def start_early(self, source_ids: Iterable[str], *, list_ahead: Iterable[str] = ()) -> None:
        """Begin starting these sources' drivers now, so a provider's start-up (Codex:
        about 0.1 to 0.4 s to its `initialize` answer) overlaps what the caller does
        before it needs them. Each driver is made here (its modules imported: Python work
        a thread would only contend for) and started on a thread of its own (mostly
        waiting on the child). `get` waits for the start and gives what a start on its
        own thread would have: the driver, the remembered DriverError, or any other
        failure raised.

        The sources in `list_ahead` also begin listing as soon as they are started (a
        driver with `list_ahead`, Codex's), so the provider makes the first pages while
        the caller sets up; the caller must have allocated their observation sequences."""
        listing = set(list_ahead)
        for source_id in source_ids:
            if self._stopped or source_id in self._drivers or source_id in self._early:
                continue
            early = _EarlyStart()
            self._early[source_id] = early
            try:
                driver = self._factory(source_id)
            except Exception as exc:  # noqa: BLE001 -- given by `get`, as a start there would
                early.outcome = exc
                early.done.set()
                continue
            threading.Thread(target=self._start, args=(driver, early, source_id in listing), daemon=True,
                             name=f"start of source {source_id}").start()

    def _start(self, driver: AgentDriver, early: _EarlyStart, list_ahead: bool = False) -> None:
        outcome: AgentDriver | DriverError | BaseException
        try:
            driver.start()
            outcome = driver
            begin = getattr(driver, "list_ahead", None) if list_ahead else None
            if begin is not None:
                begin()  # asks for nothing it cannot take back: a page never taken is dropped
        except BaseException as exc:  # noqa: BLE001 -- given by `get`, on the caller's thread
            outcome = exc
        with self._lock:
            early.outcome = outcome
            orphan = self._stopped  # the pool stopped without waiting: nobody will stop it
        if orphan and isinstance(outcome, AgentDriver):
            outcome.stop()
        early.done.set()

    def get(self, source_id: str) -> AgentDriver | DriverError:
        early = self._early.pop(source_id, None)
        if early is not None:
            early.done.wait()
            outcome = early.outcome
            if not isinstance(outcome, AgentDriver | DriverError):  # not remembered, as below
                assert outcome is not None
                raise outcome
            if not (self._stopped and isinstance(outcome, AgentDriver)):  # else stopped by its start
                self._drivers[source_id] = outcome
        if source_id not in self._drivers:
            if self._stopped:
                return DriverError("driver-stopped", f"source {source_id}: its provider was stopped")
            try:
                driver = self._factory(source_id)
                driver.start()
                self._drivers[source_id] = driver
            except DriverError as exc:
                self._drivers[source_id] = exc
        return self._drivers[source_id]

    def require(self, source_id: str) -> AgentDriver:
        """The started driver of `source_id`; its start failure raised as a DriverError."""
        driver = self.get(source_id)
        if isinstance(driver, DriverError):
            raise driver
        return driver

    def stop_all(self) -> None:
        """Stop every started driver now, which ends the waits of their calls in flight,
        and start no other: the pool's calls fail from here on (a host's stop that can
        wait no longer for a provider that does not answer). A start still running on its
        own thread stops its driver when it ends."""
        if not self._stopped:
            with self._lock:
                self._stopped = True
                # an early start that ended already is stopped here; one still running, by itself
                started = [early.outcome for early in self._early.values() if early.outcome is not None]
            for driver in [*self._drivers.values(), *started]:
                if isinstance(driver, AgentDriver):
                    driver.stop()

    def close_in_background(self) -> None:
        """Begin `close` on a thread of its own and return at once: the caller needs no
        provider any more (every read answered) and has other work (the index commit)
        while the providers exit (Codex checkpoints its state database as it does).
        `close` waits for it to end, and raises what it raised."""
        if self._closing is None and not self._stopped:
            self._closing = _Closing(self._close_now)

    def close(self) -> None:
        closing, self._closing = self._closing, None
        if closing is not None:
            closing.wait()
        self._close_now()

    def _close_now(self) -> None:
        if not self._stopped:
            for early in list(self._early.values()):
                early.done.wait()  # a start still running: its driver is stopped below
                if isinstance(early.outcome, AgentDriver):
                    early.outcome.stop()
            for driver in self._drivers.values():
                if isinstance(driver, AgentDriver):
                    driver.stop()
        with self._lock:
            self._stopped = True
        self._early.clear()
        self._drivers.clear()

    def __enter__(self) -> DriverPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

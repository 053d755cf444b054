"""The long-running host (`agentctl serve`): sessions kept published, commands carried out.

    host = Host(workspace, interval=900)
    host.run()                       # blocks until host.stop(); signal handlers call
    host.request_collection("HUP")   #   these two from any thread

Startup (spec "Lifecycle"): the executor lock, the target and the ledgers (`Executor`),
every enabled source started (one that cannot start is `failed` in health while the
others go on), unpublished receipts recovered, one complete collection, then commands
admitted from every bound queue through the store's change feed.

Collections run on a thread of their own: one every `interval` seconds (0: only on
request), on SIGHUP, and on request. While one runs, at most one more is pending,
however many requests arrive. Each allocates its observation sequence before its first
provider call (`run_sync`).

Shutdown: admission stops, the active collection finishes (a pending one is dropped),
the admitted commands finish while drivers and the store still work, receipts left
pending are published once more, the drivers stop, `stopped` health is published, and
the locks are released. Health is published whenever it changes. A collection still
waiting for a provider SHUTDOWN_GRACE_SECONDS after the stop has its providers stopped
(the spec: a host stops the driver to interrupt a provider call that does not return on
its own), so a provider that never answers a listing or a read cannot hold a stop.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from importlib.metadata import version as package_version
from typing import Any

from lib.drivers.base import AgentDriver, DriverError
from lib.executor import Executor
from lib.health import HostHealth
from lib.pipeline.records import Item, RecordSink, data_of, kind_of
from lib.pipeline.sync import run_sync
from lib.receipts import CommandReceipt
from lib.worker import CommandTaskFailure
from lib.workspace import Workspace

HEALTH_CHECK_SECONDS = 0.5  # how often the host looks whether its health changed
# How long a stop waits for a running collection before it stops the providers the
# collection waits for (admitted commands are always waited for: a prompt takes minutes).
SHUTDOWN_GRACE_SECONDS = 30.0


class CollectionRecords(RecordSink):
    """What a collection's records tell health: the publication and the errors."""

    def __init__(self) -> None:
        super().__init__()
        self.publication: dict[str, Any] | None = None
        self.problems: list[dict[str, Any]] = []

    def emit(self, item: Item) -> None:
        kind = kind_of(item)
        if kind == "publication":
            self.publication = data_of(item)
        elif kind == "error":
            record = data_of(item)
            self.problems.append({k: record[k] for k in ("sourceId", "code", "message") if record.get(k)})

    def outcome(self) -> dict[str, Any]:
        publication = self.publication or {}
        sources = [
            {"sourceId": s["sourceId"], "complete": bool(s.get("inventoryComplete")),
             "listed": s.get("listed", 0), "errorCount": s.get("errorCount", 0)}
            for s in publication.get("sources", [])
        ]
        return {
            "complete": not self.problems and all(s["complete"] for s in sources),
            "sessionCount": publication.get("sessionCount", 0),
            "sources": sources,
            "errors": self.problems[-20:],
        }


class Host:
    def __init__(
        self,
        workspace: Workspace,
        *,
        interval: float = 900.0,
        notify: Callable[[str], None] | None = None,
        on_receipt: Callable[[CommandReceipt], None] | None = None,
        driver_factory: Callable[[str], AgentDriver] | None = None,
        shutdown_grace: float = SHUTDOWN_GRACE_SECONDS,
    ) -> None:
        self.workspace = workspace
        self.shutdown_grace = shutdown_grace
        self._driver_factory = driver_factory
        self.interval = interval
        self._notify = notify or (lambda _message: None)
        self._on_receipt = on_receipt
        self._stop = threading.Event()
        self._turn = threading.Condition()
        self._requested = False  # a collection asked for and not started yet
        self._collecting = False
        self.health: HostHealth | None = None
        self._published_version: int | None = None  # the health version last published
        self.collections = 0  # completed collections (tests and benchmarks count them)

    # -- requests from other threads (signal handlers) -------------------------------------

    def request_collection(self, reason: str = "request") -> None:
        """Ask for a complete collection: it starts when none runs, else it is the one
        pending collection (further requests join it)."""
        with self._turn:
            self._requested = True
            self._turn.notify_all()
        if self.health is not None:
            self.health.event("collection-requested", f"a collection was requested ({reason})")
            self.health.collection_pending(self._collecting)

    def stop(self) -> None:
        """Begin the orderly stop (idempotent: a second call does not skip the drain)."""
        self._stop.set()
        with self._turn:
            self._turn.notify_all()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    # -- the run --------------------------------------------------------------------------

    def run(self) -> None:
        with Executor(self.workspace, on_receipt=self._receipt, on_task_failure=self._task_failed,
                      driver_factory=self._driver_factory) as executor:
            target = executor.target
            assert target is not None
            self.health = health = HostHealth(
                pid=os.getpid(), hostname=socket.gethostname(), version=_version(),
                interval_seconds=self.interval, cells=_cells(target, self.workspace.config.producers),
            )
            health.set_status("starting")
            self._publish_health(force=True)
            source_ids = self.workspace.sync_sources(())
            self._start_sources(executor, source_ids)
            recovered = executor.recover()
            if recovered:
                health.event("recovered", f"{len(recovered)} receipt(s) left by an earlier executor published")
            self._first_collection(source_ids, executor)
            subscription = None
            collector = None
            try:
                if not self.stopping:
                    assert executor.worker is not None
                    worker = executor.worker
                    subscription = target.subscribe_commands(lambda d: worker.handle(d.value, d.producer))
                    health.admitting(True)
                    health.set_status("running")
                    health.event("running", "admitting commands")
                    collector = threading.Thread(target=self._collector, args=(source_ids, executor),
                                                 name="agentctl-collector", daemon=True)
                    collector.start()
                while not self._stop.wait(HEALTH_CHECK_SECONDS):
                    health.pending_receipts(executor.ledgers.pending_publication_count())
                    self._publish_health()
            finally:
                self._shutdown(executor, subscription, collector, source_ids)

    def _start_sources(self, executor: Executor, source_ids: list[str]) -> None:
        health = self.health
        assert health is not None
        for source_id in source_ids:
            health.source_starting(self.workspace.describe_source(source_id))
            driver = executor.pool.get(source_id)
            if isinstance(driver, DriverError):
                health.source_failed(source_id, driver.code, driver.message)
                self._notify(f"agentctl: source {source_id} cannot start: {driver.message}")
            else:
                health.source_running(driver.source)
        self._publish_health()

    def _first_collection(self, source_ids: list[str], executor: Executor) -> None:
        """The complete collection before commands are admitted. It runs beside this
        thread so that a stop during it is heard: it then gets the shutdown grace, like
        any collection, before its providers are stopped."""
        first = threading.Thread(target=self._collect, args=(source_ids, executor),
                                 name="agentctl-first-collection", daemon=True)
        first.start()
        while first.is_alive():
            if self._stop.wait(HEALTH_CHECK_SECONDS):
                self._within_grace(first.join, "the first collection", executor)
                return
            self._publish_health()

    def _collector(self, source_ids: list[str], executor: Executor) -> None:
        while True:
            with self._turn:
                deadline_wait = self.interval if self.interval > 0 else None
                if not self._requested and not self._stop.is_set():
                    self._turn.wait(deadline_wait)
                if self._stop.is_set():
                    return
                self._requested = False  # this collection serves every request so far
            self._collect(source_ids, executor)

    def _collect(self, source_ids: list[str], executor: Executor) -> None:
        health = self.health
        assert health is not None
        with self._turn:
            self._collecting = True
        health.collection_started()
        health.collection_pending(False)
        records = CollectionRecords()
        try:
            run_sync(self.workspace, source_ids, records, drivers=executor.pool)
        except Exception as exc:  # noqa: BLE001 - a failed collection is health, not a stop
            code = getattr(exc, "code", type(exc).__name__)
            message = getattr(exc, "message", None) or str(exc)
            health.collection_failed(code, message)
            self._notify(f"agentctl: collection failed: {message}")
        else:
            health.collection_finished(records.outcome())
        finally:
            with self._turn:
                self._collecting = False
                pending = self._requested
            health.collection_pending(pending)
            self.collections += 1
        self._publish_health()

    def _shutdown(self, executor: Executor, subscription: Any, collector: threading.Thread | None,
                  source_ids: list[str]) -> None:
        health = self.health
        assert health is not None
        health.set_status("stopping")
        health.admitting(False)
        health.event("stopping", "no new commands; finishing the collection and the admitted commands")
        self._publish_health()
        self.stop()
        if subscription is not None:
            subscription.close()
        try:
            if collector is not None:
                self._within_grace(collector.join, "the collection", executor)
            if executor.worker is not None:
                executor.worker.drain()  # a running prompt may take minutes: the drain waits
        except Exception as exc:  # noqa: BLE001 - failures were reported as they happened
            self._notify(f"agentctl: {getattr(exc, 'message', exc)}")
        finally:
            executor.recover()
            health.pending_receipts(executor.ledgers.pending_publication_count())
            executor.pool.close()
            for source_id in source_ids:
                health.source_stopped(source_id)
            health.set_status("stopped")
            health.event("stopped", "stopped in order")
            self._publish_health(force=True)

    def _within_grace(self, wait: Callable[[], None], what: str, executor: Executor) -> None:
        """`wait()`, but no longer than the shutdown grace: then every provider is stopped,
        which ends the calls still waiting for one, and the wait goes on to its end."""
        errors: list[BaseException] = []

        def run() -> None:
            try:
                wait()
            except BaseException as exc:  # noqa: BLE001 - raised in the stopping thread
                errors.append(exc)

        waiter = threading.Thread(target=run, name="agentctl-stop-wait", daemon=True)
        waiter.start()
        waiter.join(self.shutdown_grace)
        if waiter.is_alive():
            message = (f"{what} did not finish within {self.shutdown_grace:g} s of the stop: "
                       "stopping the providers")
            self._notify(f"agentctl: {message}")
            assert self.health is not None
            self.health.event("providers-stopped", message)
            executor.pool.stop_all()
            waiter.join()
        if errors:
            raise errors[0]

    # -- health -----------------------------------------------------------------------------

    def _publish_health(self, *, force: bool = False) -> None:
        health = self.health
        if health is None:
            return
        version = health.version
        if not force and version == self._published_version:
            return
        try:
            self.workspace.open_target().publish_health(health.record())
            self._published_version = version
        except Exception as exc:  # noqa: BLE001 - health is best effort; the next change retries
            self._notify(f"agentctl: health not published: {getattr(exc, 'message', exc)}")

    def _receipt(self, receipt: CommandReceipt) -> None:
        if self.health is not None:
            self.health.command_receipt(receipt)
        if self._on_receipt is not None:
            self._on_receipt(receipt)

    def _task_failed(self, failure: CommandTaskFailure) -> None:
        if self.health is not None:
            error = failure.error
            self.health.command_task_failed(
                failure.command_id, failure.producer, failure.source_id, failure.native_session_id,
                getattr(error, "code", type(error).__name__), getattr(error, "message", None) or str(error),
            )


def _cells(target: Any, producers: Any) -> dict[str, Any]:
    """Where the host's cells are (ids without a link prefix), for people and tools."""
    return {
        "recentIndex": target.recent_index_id(),
        "allIndex": target.all_index_id(),
        "receipts": target.receipt_cell_id(),
        "health": target.health_cell_id(),
        "commands": [{"producer": None, "cell": target.command_cell_id()}]
        + [{"producer": p, "cell": target.command_cell_id(p)} for p in sorted(producers)],
    }


def _version() -> str:
    try:
        return package_version("agentctl")
    except Exception:  # noqa: BLE001 - a source checkout without metadata
        return "unknown"

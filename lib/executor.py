"""The command executor: the one process per target that carries out queued commands.

    with Executor(workspace, on_receipt=print_it) as executor:
        executor.recover()          # in-flight receipts of a dead executor become unknown
        executor.run_once()         # every bound queue's pending commands, then drain
        executor.follow(stop)       # or: the queues' changes, until `stop` is set

Entering takes the target's executor lock (`store.lock(space, "executor")`) without
waiting: a second executor of the same target fails at once (exit 4) naming the holder,
so at most one process runs commands for a space (a library user that runs two workers
anyway is still safe: the claim is a store transaction, see `FabricTarget.claim_receipt`).
It opens the per-queue ledgers under the state directory, binds the owner's queue and
every configured producer's, and starts a source's driver when its first command comes.
`agentctl command run`, the one-shot `agentctl command prompt ...`, `agentctl recover`
and the host use it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from lib.drivers.base import AgentDriver
from lib.fabric.target import FabricTarget
from lib.ledger.ledgers import CommandLedgers
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.refresh_batches import RefreshBatches
from lib.receipts import CommandReceipt
from lib.session_queues import DEFAULT_MAX_SESSIONS
from lib.types import normalize_source_id
from lib.worker import CommandTaskFailure, CommandWorker
from lib.workspace import Workspace

EXECUTOR_LOCK = "executor"


def ledger_directory(state_dir: Path, target: FabricTarget) -> Path:
    """Where the ledgers of one target live: a ledger belongs to its store and space."""
    digest = hashlib.sha256(target.observation_origin().encode("utf-8")).hexdigest()[:16]
    return state_dir / "ledgers" / digest


class StartedDrivers(Mapping[str, AgentDriver]):
    """The configured sources' drivers by normalized id, each started on first use.

    An unconfigured source is absent (the worker fails its commands `unknown-source`);
    a driver that cannot start raises its DriverError from the lookup, before any
    provider call, so its commands fail without running."""

    def __init__(self, workspace: Workspace, pool: DriverPool) -> None:
        self._workspace = workspace
        self._pool = pool
        self._ids = [normalize_source_id(s.id) for s in workspace.config.sources]

    def __getitem__(self, source_id: str) -> AgentDriver:
        if source_id not in self._ids:
            raise KeyError(source_id)
        return self._pool.require(source_id)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class Executor:
    def __init__(
        self,
        workspace: Workspace,
        *,
        on_receipt: Callable[[CommandReceipt], None] | None = None,
        on_task_failure: Callable[[CommandTaskFailure], None] | None = None,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        driver_factory: Callable[[str], AgentDriver] | None = None,
    ) -> None:
        self.workspace = workspace
        # a configured source's driver, by id (a library user or a benchmark may bring its own)
        self._driver_factory = driver_factory or workspace.create_driver
        self._on_receipt = on_receipt
        self._on_task_failure = on_task_failure
        self._max_sessions = max_sessions
        self.target: FabricTarget | None = None
        self.worker: CommandWorker | None = None

    def __enter__(self) -> Executor:
        target = self.workspace.open_target()
        lock = target.store.lock(target.space, EXECUTOR_LOCK, timeout=0)
        lock.acquire()  # LockHeld (exit 4) names the running executor
        self._lock = lock
        try:
            self.ledgers = CommandLedgers(ledger_directory(self.workspace.private_state_path(), target))
            self.pool = DriverPool(self._driver_factory)
            refreshes = RefreshBatches()
            self.worker = CommandWorker(
                StartedDrivers(self.workspace, self.pool), [target], self.ledgers,
                self._on_receipt, self._on_task_failure, owner_did=target.owner, max_sessions=self._max_sessions,
                refresh=refreshes.refresh, refresh_after=refreshes.refresh_later, sole_executor=True,
            )
            self.target = target
            self._bind_queues()
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def _close(self) -> None:
        try:
            if self.worker is not None:
                self.worker.close()
        finally:
            for part in ("pool", "ledgers"):
                if hasattr(self, part):
                    getattr(self, part).close()
            self._lock.release()

    def _bind_queues(self) -> None:
        target = self.target
        assert target is not None
        target.bind_command_cell(target.command_cell_id(), target.writer)
        for producer, writer in self.workspace.config.producers.items():
            target.bind_producer_command_cell(producer, writer)

    # -- work ---------------------------------------------------------------------------

    def recover(self) -> list[CommandReceipt]:
        """Receipts a dead executor left: in-flight ones become `unknown`, and every
        receipt not yet published is published (spec: before accepting commands)."""
        assert self.worker is not None
        return self.worker.recover_unpublished_receipts()

    def run_once(self) -> None:
        """Every bound queue's commands as they are now, each carried out (or skipped as
        done), waiting for all of them."""
        assert self.worker is not None and self.target is not None
        for delivery in self.target.poll_commands():
            self.worker.handle(delivery.value, delivery.producer)
        self.worker.drain()

    def run_values(self, values: object, producer: str | None = None) -> None:
        """These command values (one submitted here), waiting for them."""
        assert self.worker is not None
        self.worker.handle(values, producer)
        self.worker.drain()

    def follow(self, stop: threading.Event) -> None:
        """Commands as they arrive on every bound queue, until `stop` is set; then the
        admitted ones are finished and receipts left pending are flushed once more."""
        assert self.worker is not None and self.target is not None
        worker = self.worker
        subscription = self.target.subscribe_commands(lambda d: worker.handle(d.value, d.producer))
        try:
            stop.wait()
        finally:
            subscription.close()
            try:
                worker.drain()
            finally:
                worker.recover_unpublished_receipts()

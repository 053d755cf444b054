"""`CommandWorker`: runs queued commands against drivers and publishes their receipts
(interfaces §Command worker; architecture §Command worker and ledger; docs/command-path.md).

For each admitted command, on a session queue (`lib/session_queues.py`):
1. read its receipt on every target: a terminal one is stored and republished (it
   repairs the bounded index); a non-terminal one becomes `unknown` when this worker is
   the sole executor (its executor died), and is left to its executor otherwise;
   neither calls the provider;
2. claim it: the `in-flight` receipt into the ledger, then `claim_receipt` on every
   target. A target that already holds a receipt means another executor has the claim:
   its receipt is stored as published and nothing runs here. A claim that cannot be
   written gives the `failed` receipt `claim-publish-failed`, and nothing runs;
3. call the provider; 4. the one terminal receipt: ledger, every target, marker
   cleared only when all accepted (in memory at once, on disk with the ledger's next
   write: docs/command-path.md), then the `on_receipt` observer; 5. refresh the
   session on every target, even when publication failed: in the background, beside
   the session's next command, coalesced with other refreshes; `drain()` waits for it.
A receipt that is not published everywhere stays pending in the ledger and makes the
task fail; `recover_unpublished_receipts()` publishes it later. Nothing is retried.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from lib.commands import parse_commands
from lib.driver_calls import call_driver
from lib.drivers.base import AgentDriver, DriverError
from lib.errors import CodedError
from lib.fabric.target import FabricTarget
from lib.ledger.ledgers import CommandLedgers
from lib.pipeline.refresh import refresh_session
from lib.pipeline.refresh_batches import BackgroundRefreshes
from lib.receipts import (
    CommandReceipt,
    ReceiptValidationError,
    claim_publish_failed,
    in_flight_receipt,
    parse_command_receipt,
    terminal_receipt,
)
from lib.session_queues import DEFAULT_MAX_SESSIONS, CommandTask, SessionQueues
from lib.types import (
    CommandExecutionOptions,
    CommandExecutionResult,
)

log = logging.getLogger(__name__)

Refresh = Callable[[FabricTarget, AgentDriver, str], object]


@dataclass(frozen=True)
class CommandTaskFailure:
    """What the task-failure callback gets: identities and the error, never the payload."""

    command_id: str
    producer: str | None
    source_id: str
    native_session_id: str
    error: BaseException


class CommandTasksFailed(CodedError):
    """`drain()` after scheduled work failed; `failures` holds each one."""

    def __init__(self, failures: Sequence[CommandTaskFailure]) -> None:
        first = failures[0]
        what = getattr(first.error, "message", None) or type(first.error).__name__
        super().__init__(
            "command-tasks-failed",
            f"{len(failures)} command task(s) failed; the first, command {first.command_id}: {what}",
        )
        self.failures = list(failures)
        self.errors = [failure.error for failure in failures]


def _unknown(code: str, message: str) -> CommandExecutionResult:
    return CommandExecutionResult.failure("unknown", code, message, retryable=False)


def _failed(code: str, message: str, *, retryable: bool = False) -> CommandExecutionResult:
    return CommandExecutionResult.failure("failed", code, message or code, retryable=retryable)


class CommandWorker:
    def __init__(
        self,
        drivers: Mapping[str, AgentDriver],
        targets: Sequence[FabricTarget],
        ledgers: CommandLedgers,
        on_receipt: Callable[[CommandReceipt], object] | None = None,
        on_task_failure: Callable[[CommandTaskFailure], object] | None = None,
        *,
        owner_did: str,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        refresh: Refresh = refresh_session,
        refresh_after: Refresh | None = None,
        sole_executor: bool = False,
    ) -> None:
        if not targets:
            raise ValueError("a command worker needs at least one target")
        # Looked up by normalized id, never iterated: a host's mapping may start a
        # driver on its first lookup (lib.executor.StartedDrivers).
        self.drivers = drivers
        self.targets = list(targets)
        self.ledgers = ledgers
        self.on_receipt = on_receipt
        self.on_task_failure = on_task_failure
        self.owner_did = owner_did
        self._refresh = refresh
        # the refresh after an outcome: `refresh` unless the host gives one that may share
        # a read with the session's next refresh (RefreshBatches.refresh_later)
        self._refresh_after = refresh_after or refresh
        # True when the caller holds the targets' executor lock: no other executor runs,
        # so a shared in-flight receipt was left by a dead one (it becomes `unknown`).
        # Otherwise it may be another live executor's claim, which is left alone.
        self.sole_executor = sole_executor
        self._handle_lock = threading.Lock()
        self._scheduled: set[tuple[str | None, str]] = set()
        self._failures: list[CommandTaskFailure] = []
        self._failures_lock = threading.Lock()
        self._closed = False
        self._queues = SessionQueues(self._run, max_sessions=max_sessions)
        # The refresh after an outcome runs beside the session's next command, not before it.
        self._after = BackgroundRefreshes(
            lambda driver, session: self._refresh_all(driver, session, self._refresh_after), max_workers=max_sessions)

    # ---- admission ---------------------------------------------------------------------

    def handle(self, values: Any, producer: str | None = None) -> None:
        """Validate a snapshot of a queue's value and schedule each new command; returns
        without waiting for provider work. Invalid commands are logged and skipped."""
        with self._handle_lock:
            if self._closed:
                raise CodedError("worker-closed", "the command worker is closed")
            batch = parse_commands(values, owner_did=self.owner_did)
            for command in batch.commands:
                key = (producer, command.id)
                if key in self._scheduled:
                    continue
                if self.ledgers.get(command.id, producer) is not None:
                    log.debug("command %s is already in the ledger; not run again", command.id)
                    continue
                self._scheduled.add(key)
                self._queues.admit(CommandTask(command, producer))

    def drain(self) -> None:
        """Wait for parsing and every scheduled command; then raise `CommandTasksFailed`
        when any of them failed (each failure is reported once)."""
        with self._handle_lock:
            pass
        self._queues.wait_idle()
        self._after.wait()
        with self._failures_lock:
            failures, self._failures = self._failures, []
        if failures:
            raise CommandTasksFailed(failures)

    def close(self) -> None:
        """Stop admission, drain, stop the threads."""
        with self._handle_lock:
            self._closed = True
        try:
            self.drain()
        finally:
            self._queues.close()
            self._after.close()

    # ---- one command -------------------------------------------------------------------

    def _run(self, task: CommandTask) -> None:
        command = task.command
        try:
            self._execute(task)
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none is lost
            failure = CommandTaskFailure(
                command.id, task.producer, command.source_id, command.native_session_id, exc
            )
            log.error("command %s (%s on %s/%s) failed: %s", command.id, command.type, command.source_id,
                      command.native_session_id, getattr(exc, "message", None) or type(exc).__name__)
            with self._failures_lock:
                self._failures.append(failure)
            if self.on_task_failure is not None:
                try:
                    self.on_task_failure(failure)
                except Exception:
                    log.exception("the command task failure callback failed")

    def _execute(self, task: CommandTask) -> None:
        command, producer = task.command, task.producer
        driver, unavailable = self._driver(command.source_id)
        shared = self._read_shared(command.id, producer)
        if shared is not None:
            if not shared.terminal and not self.sole_executor:
                self._claimed_elsewhere(shared)
                return
            if not shared.terminal:
                shared = terminal_receipt(shared, _unknown(
                    "claim-lost-contact",
                    "another executor claimed this command and recorded no outcome; "
                    "whether the provider ran it is unknown",
                ))
            self._finish(shared, driver)
            return
        claim = in_flight_receipt(command, producer=producer)
        self.ledgers.put(claim)
        try:
            for target in self.targets:
                if not target.claim_receipt(claim):
                    self._lost_claim(target, claim)
                    return
        except Exception as exc:
            why = getattr(exc, "message", None) or type(exc).__name__
            log.warning("command %s: its claim could not be published (%s); not running it", command.id, why)
            self._finish(claim_publish_failed(claim, f"the in-flight receipt could not be published: {why}"), driver)
            return
        outcome = _failed(unavailable.code, unavailable.message) if unavailable else self._call(task, driver)
        self._finish(self._terminal(claim, outcome), driver)

    def _driver(self, source_id: str) -> tuple[AgentDriver | None, DriverError | None]:
        """The source's driver, or why there is none that can run: a driver that cannot
        start fails the command without a provider call."""
        try:
            return self.drivers.get(source_id), None
        except DriverError as exc:
            return None, exc

    def _read_shared(self, command_id: str, producer: str | None) -> CommandReceipt | None:
        """The receipt a target already holds: a terminal one first."""
        found: list[CommandReceipt] = []
        for target in self.targets:
            read = getattr(target, "read_receipt", None)
            if read is not None:
                receipt = read(command_id, producer)
                if receipt is not None:
                    found.append(receipt)
        return next((r for r in found if r.terminal), found[0] if found else None)

    def _lost_claim(self, target: FabricTarget, claim: CommandReceipt) -> None:
        """Our claim lost the race to another executor's: its receipt replaces ours in
        the ledger, marked published, so this worker never runs the command and
        recovery never turns the other executor's claim `unknown` (recovery only
        settles in-flight claims still awaiting publication: our own)."""
        theirs = target.read_receipt(claim.command_id, claim.producer)
        if theirs is None:
            raise CodedError("claim-lost", f"command {claim.command_id}: the claim was refused but no receipt is there")
        # one write: stored and published together, so no crash leaves it pending (pending,
        # an in-flight receipt would read as our own claim and recovery would settle it)
        self.ledgers.put(theirs, published=True)
        log.warning("command %s: another executor won its claim (%s); not running it here",
                    claim.command_id, theirs.status)

    def _claimed_elsewhere(self, theirs: CommandReceipt) -> None:
        """Without the executor lock, a shared in-flight receipt may be a live
        executor's claim: nothing runs here and nothing is recorded (the in-process
        schedule keeps the command from running again in this process)."""
        log.warning("command %s: another executor holds its claim; not running it here", theirs.command_id)

    def _call(self, task: CommandTask, driver: AgentDriver | None) -> CommandExecutionResult:
        command = task.command
        if driver is None:
            return _failed("unknown-source", f"no source {command.source_id!r} is configured here")
        try:
            outcome = self._dispatch(task, driver)
        except DriverError as exc:
            return _failed(exc.code, exc.message, retryable=exc.retryable)  # never exc.detail
        except Exception as exc:  # the call may have reached the provider
            log.exception("command %s: the %s call raised", command.id, command.type)
            return _unknown(
                "provider-call-raised",
                f"the {command.type} call raised {type(exc).__name__}; whether the provider ran it is unknown",
            )
        if command.type == "start":
            result = dict(outcome.result or {})
            result.setdefault("nativeSessionId", command.native_session_id)
            cwd = command.payload.cwd or driver.config.cwd  # type: ignore[union-attr]
            if cwd is not None:
                result.setdefault("cwd", cwd)
            outcome = outcome.model_copy(update={"result": result})
        return outcome

    def _dispatch(self, task: CommandTask, driver: AgentDriver) -> CommandExecutionResult:
        session = task.command.native_session_id
        options = CommandExecutionOptions(
            on_cancellation_ready=task.ready.set,
            on_session_active=lambda: self._refresh_all(driver, session),
            force=bool(task.command.force),
        )
        return call_driver(driver, task.command, options)

    def _terminal(self, claim: CommandReceipt, outcome: CommandExecutionResult) -> CommandReceipt:
        try:
            return terminal_receipt(claim, outcome)
        except (ValidationError, ValueError):
            log.warning("command %s: the provider's result is not a valid receipt", claim.command_id)
            return terminal_receipt(claim, _unknown(
                "invalid-provider-result", "the provider answered with a result that is not a valid receipt"
            ))

    # ---- the terminal receipt ----------------------------------------------------------

    def _finish(self, receipt: CommandReceipt, driver: AgentDriver | None) -> None:
        """Ledger, every target, the marker, the observer, then the refresh; raises when
        the receipt is not published everywhere (it stays pending in the ledger)."""
        errors: list[Exception] = []
        stored = self._store(receipt, errors)
        if self._publish_everywhere(receipt, errors) and stored:
            self._published(receipt, errors)
        if driver is not None:
            self._after.request(driver, receipt.native_session_id)
        if errors:
            first = errors[0]
            raise CodedError(
                "receipt-publish-failed",
                f"the receipt of command {receipt.command_id} is not published everywhere "
                f"({getattr(first, 'message', None) or type(first).__name__}); it stays pending for recovery",
            ) from first

    def _store(self, receipt: CommandReceipt, errors: list[Exception]) -> bool:
        try:
            self.ledgers.put(receipt)
            return True
        except Exception as exc:
            errors.append(exc)
            return False

    def _publish_everywhere(self, receipt: CommandReceipt, errors: list[Exception]) -> bool:
        accepted = True
        for target in self.targets:
            try:
                target.publish_receipt(receipt)
            except Exception as exc:
                log.warning("command %s: receipt not published to %s: %s", receipt.command_id,
                            getattr(target, "space", "a target"), getattr(exc, "message", None) or type(exc).__name__)
                errors.append(exc)
                accepted = False
        return accepted

    def _published(self, receipt: CommandReceipt, errors: list[Exception]) -> None:
        try:
            # clear at once, written with the ledger's next write: a crash before then only
            # makes recovery publish this terminal receipt again (it never runs again)
            self.ledgers.mark_published(receipt.command_id, receipt.producer, defer=True)
        except Exception as exc:
            errors.append(exc)
            return
        if self.on_receipt is not None:
            try:
                self.on_receipt(receipt)
            except Exception:
                log.exception("the receipt callback failed for command %s", receipt.command_id)

    def _refresh_all(self, driver: AgentDriver, native_session_id: str, refresh: Refresh | None = None) -> None:
        for target in self.targets:
            try:
                (refresh or self._refresh)(target, driver, native_session_id)
            except Exception as exc:
                log.warning("refreshing %s/%s failed: %s", driver.source.id, native_session_id,
                            getattr(exc, "message", None) or type(exc).__name__)

    # ---- recovery ----------------------------------------------------------------------

    def recover_unpublished_receipts(self) -> list[CommandReceipt]:
        """Ledger receipts left `in-flight` by an earlier process become `unknown`; then
        every receipt awaiting publication is published to every target and its marker
        cleared when all accepted. Returns the receipts published (failures are logged
        and stay pending: see `ledgers.pending_publication_count()`)."""
        for stored in self.ledgers.pending():
            # An in-flight claim still awaiting publication is our own (a lost claim
            # is stored as the winner's receipt, already published).
            if stored["status"] == "in-flight":
                claim = parse_command_receipt(stored, context="ledger receipt")
                self.ledgers.put(terminal_receipt(claim, _unknown(
                    "interrupted",
                    "the process that claimed this command stopped before recording an outcome; "
                    "whether the provider ran it is unknown",
                )))
        published: list[CommandReceipt] = []
        for stored in self.ledgers.pending():
            try:
                receipt = parse_command_receipt(stored, context="ledger receipt")
            except ReceiptValidationError as exc:
                log.warning("a pending ledger receipt is invalid: %s", exc.message)
                continue
            errors: list[Exception] = []
            if self._publish_everywhere(receipt, errors):
                self.ledgers.mark_published(receipt.command_id, receipt.producer)
                published.append(receipt)
        return published

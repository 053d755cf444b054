"""Command queues: binding, appending, polling and subscribing (spec "Command";
docs/command-path.md "Queues stay short"; interfaces.md "Receipt cells and command queues").

A queue cell holds an array of commands (inline objects, JSON strings, or links to
cells holding one). Its labels are the policy: confidentiality the owner, integrity
exactly the one writer bound to it, so the store refuses (WriteDenied) anyone else's
append. The owner's queue is `commands_cause(space, owner)`; a producer's is
`commands_cause(space, owner, producer)`.

Queues are bound before they are watched: a `CommandSubscription` watches the queues
bound when it started, so binding while one is live is an error.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lib.commands import AgentSessionCommand, CommandValidationError, parse_command
from lib.fabric.cell_id import cell_id, commands_cause
from lib.fabric.graph_read import read_graph_value
from lib.fabric.identity import is_did
from lib.fabric.store import Labels
from lib.fabric.store_errors import ConflictError
from lib.fabric.target_errors import TargetError
from lib.fabric.values import Link

if TYPE_CHECKING:
    from lib.fabric.target import FabricTarget

log = logging.getLogger(__name__)

ATTEMPTS = 5  # appends tried when another writer moves the queue meanwhile


@dataclass(frozen=True)
class CommandDelivery:
    """The hydrated value of one queue; `producer` None for the owner's queue."""

    producer: str | None
    value: Any


class CommandQueues:
    """The queues one target has bound, and its live subscriptions."""

    def __init__(self, target: FabricTarget) -> None:
        self.target = target
        self.bound: dict[str | None, str] = {}  # producer -> queue cell id
        self.live: set[CommandSubscription] = set()
        self._guard = threading.Lock()

    def cell_id(self, producer: str | None = None) -> str:
        target = self.target
        return cell_id(commands_cause(target.space, target.owner, producer))

    # -- binding -------------------------------------------------------------------------

    def bind(self, cell: str, writer: str, producer: str | None = None) -> None:
        """Bind the deterministic queue of producer (None: the owner's) to writer."""
        expected = self.cell_id(producer)
        if cell != expected:
            raise TargetError(
                "wrong-command-cell",
                f"cell {cell} is not the command queue of this owner and space ({expected})",
            )
        if not is_did(writer):
            raise TargetError("invalid-writer", f"a queue's writer is a DID, not {writer!r}")
        with self._guard:
            if self.live:
                raise TargetError(
                    "queue-bound-while-subscribed",
                    "queues are bound before commands are subscribed; close the "
                    "subscription first",
                )
            self._apply_policy(cell, Labels((self.target.owner,), (writer,)))
            self.bound[producer] = cell

    def _apply_policy(self, cell: str, policy: Labels) -> None:
        """Create the queue empty under policy, or check (or, while empty, relabel) it."""
        target = self.target
        document = target.store.read(target.space, cell)
        if document is not None and document.labels == policy:
            return
        if document is not None and document.value not in (None, []):
            raise TargetError(
                "unprotected-command-queue",
                f"command queue {cell} holds commands under other labels (confidentiality "
                f"{list(document.labels.confidentiality)}, integrity "
                f"{list(document.labels.integrity)}); it is not adopted",
            )
        target._writable("bind a command queue")
        with target.store.transaction(target.space, target.writer) as tx:
            if tx.read(cell) is None:
                tx.require_absent(cell)
            tx.write(cell, [], policy)
            tx.commit()

    # -- appending -----------------------------------------------------------------------

    def append(self, command: AgentSessionCommand, producer: str | None = None) -> None:
        """Append command to the queue as the target's writer, in one transaction,
        dropping the commands whose receipt on this queue is terminal."""
        target = self.target
        command = parse_command(command, owner_did=target.owner)
        cell = self.cell_id(producer)
        for attempt in range(ATTEMPTS):
            try:
                with target.store.transaction(target.space, target.writer) as tx:
                    document = tx.read(cell)
                    items = [] if document is None else self._pending(cell, document.value, producer)
                    items.append(command.to_wire())
                    if document is None:
                        tx.require_absent(cell)
                        tx.write(cell, items, Labels((target.owner,), (target.writer,)))
                    else:
                        tx.write(cell, items)  # keeps the queue's labels: its policy
                    tx.commit()
                return
            except ConflictError:
                if attempt == ATTEMPTS - 1:
                    raise

    def _pending(self, cell: str, stored: Any, producer: str | None) -> list[Any]:
        """The stored items (links kept as links) without those already done."""
        items = _as_items(stored)
        hydrated = _as_items(read_graph_value(self.target.store, self.target.space, cell))
        if len(hydrated) != len(items):
            return items  # moved on since the read; the commit will conflict and retry
        return [raw for raw, value in zip(items, hydrated, strict=True) if not self._done(value, producer)]

    def _done(self, value: Any, producer: str | None) -> bool:
        try:
            command_id = parse_command(value).id
        except CommandValidationError:
            return False  # not ours to judge: the worker logs and skips it
        try:
            receipt = self.target.read_receipt(command_id, producer)
        except TargetError:
            return False
        return receipt is not None and receipt.terminal

    # -- reading -------------------------------------------------------------------------

    def poll(self) -> list[CommandDelivery]:
        """Every bound queue's hydrated value, with its producer."""
        return [self.deliver(producer, cell) for producer, cell in self._bound_queues().items()]

    def deliver(self, producer: str | None, cell: str) -> CommandDelivery:
        target = self.target
        if target.store.read(target.space, cell) is None:
            return CommandDelivery(producer, [])
        return CommandDelivery(producer, read_graph_value(target.store, target.space, cell))

    def subscribe(
        self, callback: Callable[[CommandDelivery], object], poll_interval: float = 0.05
    ) -> CommandSubscription:
        with self._guard:
            queues = self._bound_queues()
            subscription = CommandSubscription(self, queues, callback, poll_interval)
            self.live.add(subscription)
        subscription.start()
        return subscription

    def _bound_queues(self) -> dict[str | None, str]:
        if not self.bound:
            raise TargetError(
                "no-command-queue", "no command queue is bound; bind one before reading commands"
            )
        return dict(self.bound)

    def ended(self, subscription: CommandSubscription) -> None:
        with self._guard:
            self.live.discard(subscription)


class CommandSubscription:
    """A daemon thread delivering each watched queue once at start, then whenever the
    store's change feed shows its cell written. `wake()` checks at once; `close()`
    stops the thread and joins it."""

    def __init__(
        self,
        queues: CommandQueues,
        watched: dict[str | None, str],
        callback: Callable[[CommandDelivery], object],
        poll_interval: float,
    ) -> None:
        self._queues = queues
        self._watched = watched
        self._callback = callback
        self._interval = poll_interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="command-subscription", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def wake(self) -> None:
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if threading.current_thread() is not self._thread:  # a callback may close it
            self._thread.join()
        self._queues.ended(self)

    def _run(self) -> None:
        store, space = self._queues.target.store, self._queues.target.space
        # the head before the first read: a write after it shows in the change feed
        seen = store.head(space)
        for producer, cell in self._watched.items():
            self._deliver(producer, cell)
        while not self._stop.is_set():
            try:  # the store's wait: a poll interval, or until a pushed commit (PostgreSQL)
                store.wait_for_change(space, seen, self._interval, self._wake)
            except Exception:
                log.exception("waiting for the store's change feed failed; polling")
                self._wake.wait(self._interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                changes = store.changes_since(space, seen) if store.head(space) != seen else []
            except Exception:
                log.exception("reading the store's change feed failed; trying again")
                continue
            if not changes:
                continue
            seen = max(seq for _cell, seq in changes)
            changed = {cell for cell, _seq in changes}
            for producer, cell in self._watched.items():
                if cell in changed:
                    self._deliver(producer, cell)

    def _deliver(self, producer: str | None, cell: str) -> None:
        try:
            self._callback(self._queues.deliver(producer, cell))
        except Exception:
            # one bad delivery must not stop the watch: the next change delivers again
            log.exception("command delivery for queue %s failed", cell)


def _as_items(value: Any) -> list[Any]:
    """A queue value as its list of items: an array, or one command (object, JSON
    string or link); anything else is an empty queue."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict | str | Link):
        return [value]
    return []


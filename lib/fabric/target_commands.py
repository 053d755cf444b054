"""The command and receipt entry points of a FabricTarget (spec "Command worker",
"Receipt"): reading, claiming and publishing receipts (receipt_cells.py) and binding,
appending to and watching command queues (command_queues.py).

`FabricTarget` takes them from `CommandEntryPoints`, so its callers keep one object;
they live apart from the index and health code. The group commit of receipt writes
and the queues are made on first use, and their modules imported then: a target that
only reads the index (an idle sync, `sessions`) never loads the command and receipt
models, the queues or the graph planner.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lib.fabric.target_errors import TargetError

if TYPE_CHECKING:
    from lib.commands import AgentSessionCommand
    from lib.fabric.command_queues import CommandDelivery, CommandQueues, CommandSubscription
    from lib.fabric.receipt_cells import ReceiptCommits
    from lib.receipts import CommandReceipt


class CommandEntryPoints:
    """What FabricTarget offers the command path. The target calls
    `_init_command_helpers()` from its constructor; the writing entry points call its
    `_writable(action)` (a read-only target raises `read-only-target`)."""

    _receipt_commits: ReceiptCommits | None
    _queues: CommandQueues | None

    def _init_command_helpers(self) -> None:
        self._helpers_made = threading.Lock()  # one receipt group commit and one set of queues
        self._receipt_commits = None
        self._queues = None

    @property
    def receipt_commits(self) -> ReceiptCommits:
        """The group commit of this target's receipt writes, made on first use."""
        if self._receipt_commits is None:
            from lib.fabric.receipt_cells import ReceiptCommits

            self._make_once("_receipt_commits", ReceiptCommits)
        return self._receipt_commits

    @property
    def queues(self) -> CommandQueues:
        """The command queues this target binds and watches, made on first use."""
        if self._queues is None:
            from lib.fabric.command_queues import CommandQueues

            self._make_once("_queues", CommandQueues)
        return self._queues

    def _make_once(self, attribute: str, helper: Callable[[Any], Any]) -> None:
        """Set `attribute` to `helper(self)` unless another thread did first."""
        with self._helpers_made:
            if getattr(self, attribute) is None:
                setattr(self, attribute, helper(self))

    # -- receipts (receipt_cells.py) ---------------------------------------------------

    def read_receipt(self, command_id: str, producer: str | None = None) -> CommandReceipt | None:
        """The command's validated receipt (the producer's queue's when named), None
        when it has none; an invalid stored receipt raises `invalid-receipt`."""
        from lib.fabric import receipt_cells

        return receipt_cells.read_receipt(self, command_id, producer)

    def claim_receipt(self, receipt: CommandReceipt) -> bool:
        """Write an in-flight receipt only where none exists, with its index row: True
        when this process holds the claim, False when another receipt is there."""
        self._writable("claim a command")
        from lib.fabric import receipt_cells

        return receipt_cells.claim_receipt(self, receipt)

    def publish_receipt(self, receipt: CommandReceipt) -> None:
        """Replace the command's receipt cell and its index row (one commit)."""
        self._writable("publish a receipt")
        from lib.fabric import receipt_cells

        receipt_cells.publish_receipt(self, receipt)

    def receipt_rows(self) -> list[dict[str, Any]]:
        """The receipt index rows, validated, oldest first."""
        from lib.fabric import receipt_cells

        return receipt_cells.read_index_rows(self)

    # -- command queues (command_queues.py) --------------------------------------------

    def command_cell_id(self, producer: str | None = None) -> str:
        """The owner's command queue cell ID, or producer's."""
        return self.queues.cell_id(producer)

    def bind_command_cell(self, cell_id: str, writer: str) -> None:
        """Bind the owner's queue (only its deterministic cell) to writer: create it
        empty under the owner and writer's labels, or check a populated one has them."""
        self.queues.bind(cell_id, writer)

    def bind_producer_command_cell(self, producer: str, writer: str) -> str:
        """Bind producer's queue to writer, as bind_command_cell; returns its cell ID."""
        if not isinstance(producer, str) or not producer.strip():
            raise TargetError("invalid-producer", f"a producer is a non-empty string, not {producer!r}")
        cell = self.queues.cell_id(producer)
        self.queues.bind(cell, writer, producer)
        return cell

    def append_command(self, command: AgentSessionCommand, producer: str | None = None) -> None:
        """Append command to the owner's queue (or producer's) as this target's writer;
        the store refuses (WriteDenied) a queue bound to another writer."""
        self._writable("append a command")
        self.queues.append(command, producer)

    def poll_commands(self) -> list[CommandDelivery]:
        """Every bound queue's hydrated value, with its producer (`no-command-queue`
        when none is bound)."""
        return self.queues.poll()

    def subscribe_commands(
        self, callback: Callable[[CommandDelivery], object], *, poll_interval: float = 0.05
    ) -> CommandSubscription:
        """Call back once per bound queue now, then whenever that queue changes."""
        return self.queues.subscribe(callback, poll_interval)

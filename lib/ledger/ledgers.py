"""`CommandLedgers`: one spec-exact `CommandLedger` per command queue (docs/command-path.md).

The spec's ledger keys receipts by `commandId`, but a command's identity is its id
qualified by the queue that delivered it. So every queue has a ledger file of its own
under one private directory: `owner.json` for the owner's queue and
`producer-<first 16 hex of sha256(producer)>.json` for a producer's. Each file is a
plain `CommandLedger` (two slots, its own file lock). Ledgers are opened lazily; on open
the directory is scanned for producer ledgers already on disk (their producer is named
in every receipt they hold), so recovery sees every queue's receipts.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lib.ledger import files
from lib.ledger.files import LedgerError
from lib.ledger.ledger import CommandLedger
from lib.ledger.receipts import InvalidReceipt
from lib.receipts import CommandReceipt

OWNER_FILE = "owner.json"
_PRODUCER_FILE = re.compile(r"(producer-[0-9a-f]{16}\.json)(?:\.previous)?")


def producer_file_name(producer: str) -> str:
    """The ledger file of a producer's queue."""
    return f"producer-{hashlib.sha256(producer.encode('utf-8')).hexdigest()[:16]}.json"


def file_name(producer: str | None) -> str:
    return OWNER_FILE if producer is None else producer_file_name(producer)


def _wire(receipt: CommandReceipt | Mapping[str, Any]) -> dict[str, Any]:
    return receipt.to_wire() if isinstance(receipt, CommandReceipt) else dict(receipt)


class CommandLedgers:
    """Every queue's ledger under one private (0700) directory. Thread-safe."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(os.path.abspath(directory))
        files.ensure_directory(self.directory)
        self._lock = threading.Lock()
        self._ledgers: dict[str | None, CommandLedger] = {}
        self._closed = False
        try:
            self._open_existing()
        except BaseException:
            self.close()
            raise

    def _open_existing(self) -> None:
        """Open the owner's ledger when present and every producer ledger on disk."""
        names: set[str] = set()
        for entry in os.scandir(self.directory):
            match = _PRODUCER_FILE.fullmatch(entry.name)
            if match:
                names.add(match.group(1))
        if (self.directory / OWNER_FILE).exists() or (self.directory / (OWNER_FILE + ".previous")).exists():
            self._ledger(None)
        for name in sorted(names):
            ledger = CommandLedger.open(self.directory / name)
            producers = {receipt.get("producer") for receipt in ledger.receipts()}
            if not producers:
                ledger.close()  # nothing in it: opened again when its producer is named
                continue
            producer = next(iter(producers))
            if len(producers) != 1 or not isinstance(producer, str) or producer_file_name(producer) != name:
                ledger.close()
                raise LedgerError(
                    "invalid-ledger",
                    f"command ledger {self.directory / name} holds receipts of another queue; move it away",
                )
            self._ledgers[producer] = ledger

    def _ledger(self, producer: str | None) -> CommandLedger:
        with self._lock:
            if self._closed:
                raise LedgerError("ledger-closed", f"command ledgers in {self.directory} are closed")
            ledger = self._ledgers.get(producer)
            if ledger is None:
                ledger = CommandLedger.open(self.directory / file_name(producer))
                self._ledgers[producer] = ledger
            return ledger

    def _all(self) -> list[CommandLedger]:
        with self._lock:
            if self._closed:
                raise LedgerError("ledger-closed", f"command ledgers in {self.directory} are closed")
            return [self._ledgers[key] for key in sorted(self._ledgers, key=lambda p: (p is not None, p or ""))]

    def get(self, command_id: str, producer: str | None = None) -> dict[str, Any] | None:
        """A copy of the receipt of `command_id` on that queue, None when there is none."""
        return self._ledger(producer).get(command_id)

    def put(self, receipt: CommandReceipt | Mapping[str, Any], *, published: bool = False) -> None:
        """Store `receipt` in its queue's ledger (its `producer` says which) and mark it
        pending publication (with `published`: stored as published, one write)."""
        if isinstance(receipt, CommandReceipt):  # validated already: stored without a second check
            self._ledger(receipt.producer).put(receipt, published=published)
            return
        value = _wire(receipt)
        producer = value.get("producer")
        if producer is not None and not isinstance(producer, str):
            raise InvalidReceipt("invalid-receipt", "receipt.producer: must be a string")
        self._ledger(producer).put(value, published=published)

    def mark_published(self, command_id: str, producer: str | None = None, *, defer: bool = False) -> None:
        """Clear the marker; with `defer`, in memory now and on disk with the queue
        ledger's next write or at close (`CommandLedger.mark_published`)."""
        self._ledger(producer).mark_published(command_id, defer=defer)

    def pending_publication_count(self) -> int:
        """The outbox size over every queue (never the receipts)."""
        return sum(ledger.pending_publication_count() for ledger in self._all())

    def pending(self) -> list[dict[str, Any]]:
        """Copies of every queue's receipts awaiting publication (the owner's queue first)."""
        return [receipt for ledger in self._all() for receipt in ledger.pending()]

    def receipts(self) -> list[dict[str, Any]]:
        """Copies of every queue's receipts (the owner's queue first)."""
        return [receipt for ledger in self._all() for receipt in ledger.receipts()]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            ledgers, self._ledgers = list(self._ledgers.values()), {}
        for ledger in ledgers:
            ledger.close()

    def __enter__(self) -> CommandLedgers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""A fake, in-memory receipt target: `read_receipt`, `claim_receipt` and `publish_receipt`
as docs/command-path.md defines them for FabricTarget, with faults a real store cannot be
made to show (a claim or a publication that raises). Tests that rely on a fault say
"fake" in their names."""

from __future__ import annotations

import threading

from lib.errors import CodedError
from lib.receipts import CommandReceipt

Key = tuple[str | None, str]


class FakeMemoryTarget:
    def __init__(self, name: str = "memory") -> None:
        self.space = name
        self.receipts: dict[Key, CommandReceipt] = {}
        self.published: list[CommandReceipt] = []  # every publish_receipt, in order
        self.claims: list[CommandReceipt] = []
        self.events: list[tuple[str, str, str]] = []  # (claim | publish, command id, status)
        self.fail_claims = False
        self.fail_publications = False
        self._lock = threading.Lock()

    def read_receipt(self, command_id: str, producer: str | None = None) -> CommandReceipt | None:
        with self._lock:
            return self.receipts.get((producer, command_id))

    def claim_receipt(self, receipt: CommandReceipt) -> bool:
        if self.fail_claims:
            raise CodedError("store-unavailable", "the fake store refuses the claim")
        with self._lock:
            key = (receipt.producer, receipt.command_id)
            if key in self.receipts:
                return False
            self.receipts[key] = receipt
            self.claims.append(receipt)
            self.events.append(("claim", receipt.command_id, receipt.status))
            return True

    def publish_receipt(self, receipt: CommandReceipt) -> None:
        if self.fail_publications:
            raise CodedError("store-unavailable", "the fake store refuses the publication")
        with self._lock:
            self.receipts[(receipt.producer, receipt.command_id)] = receipt
            self.published.append(receipt)
            self.events.append(("publish", receipt.command_id, receipt.status))

    def receipt(self, command_id: str, producer: str | None = None) -> CommandReceipt | None:
        return self.read_receipt(command_id, producer)

"""A process that writes a ledger in a loop until it is killed (test_ledger_kill.py).

Commit k (the generation it makes) is a function of k alone, so the state a ledger
must hold at generation G can be replayed in memory: odd k puts a receipt, even k
marks the previous one published. Prints "writing" once its first commit is on disk.

With `--deferred`, even k clears the marker as the worker does (`defer=True`: no write
of its own; the next put writes it), so generation G holds steps 1..2G-1
(`deferred_steps`).
"""

from __future__ import annotations

import math
import sys
from typing import Any

from lib.hashing import UNDEFINED


def step_receipt(k: int) -> dict[str, Any]:
    return {
        "schema": "commonfabric.agent-connector.command-receipt",
        "commandId": f"cmd-{(k // 2) % 7}",
        "sourceId": "codex",
        "nativeSessionId": "session",
        "status": "succeeded",
        "result": {"k": k, "big": 2**64 + k, "nan": math.nan, "u": UNDEFINED, "pad": "x" * (k % 500)},
    }


def apply_step(ledger: Any, k: int, *, deferred: bool = False) -> None:
    if k % 2:
        ledger.put(step_receipt(k))
    elif deferred:
        ledger.mark_published(step_receipt(k - 1)["commandId"], defer=True)
    else:
        ledger.mark_published(step_receipt(k - 1)["commandId"])


def deferred_steps(generation: int) -> int:
    """The steps a ledger written with deferred clears holds at `generation`: each write
    is a put, carrying the clear made just before it."""
    return max(0, 2 * generation - 1)


class Model:
    """What a ledger holds after commits 1..generation."""

    def __init__(self, generation: int) -> None:
        self.receipts: dict[str, dict[str, Any]] = {}
        self.pending: list[str] = []
        for k in range(1, generation + 1):
            apply_step(self, k)

    def put(self, receipt: dict[str, Any]) -> None:
        cid = receipt["commandId"]
        self.receipts[cid] = receipt
        self.pending = [p for p in self.pending if p != cid] + [cid]

    def mark_published(self, cid: str, defer: bool = False) -> None:
        self.pending.remove(cid)


def main(path: str, mode: str = "") -> None:
    from lib.ledger import CommandLedger

    ledger = CommandLedger.open(path)
    announced = False
    deferred = mode == "--deferred"
    k = max(1, 2 * ledger.generation) if deferred else 0
    opened_at = ledger.generation
    while True:
        if deferred:
            apply_step(ledger, k, deferred=True)
            k += 1
        else:
            apply_step(ledger, ledger.generation + 1)
        if not announced and ledger.generation > opened_at:
            sys.stdout.write("writing\n")
            sys.stdout.flush()
            announced = True


if __name__ == "__main__":
    main(*sys.argv[1:])

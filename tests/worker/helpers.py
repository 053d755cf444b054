"""Set-up for the worker tests: commands, a scripted driver, fake targets, recorders."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lib.commands import COMMAND_SCHEMA
from lib.ledger import CommandLedgers
from lib.receipts import CommandReceipt
from lib.worker import CommandTaskFailure, CommandWorker
from tests.support.scripted_driver import ScriptedDriver
from tests.support.sessions import make_snapshot
from tests.worker.memory_target import FakeMemoryTarget

OWNER = "did:key:z6MkWorkerTestOwner"
PRODUCER = "did:key:z6MkWorkerTestProducer"

DEFAULT_PAYLOADS: dict[str, dict[str, Any]] = {
    "prompt": {"text": "hello"},
    "start": {"text": "begin"},
    "cancel": {},
    "rename": {"title": "renamed"},
    "set-mode": {"mode": "plan"},
    "set-config-option": {"key": "k", "value": 1},
}


def command(
    cid: str, kind: str = "prompt", session: str = "s1", *, source: str = "scripted",
    owner: str = OWNER, **payload: Any,
) -> dict[str, Any]:
    return {
        "schema": COMMAND_SCHEMA,
        "ownerDid": owner,
        "id": cid,
        "createdAt": "2026-07-01T12:00:00.000Z",
        "sourceId": source,
        "nativeSessionId": session,
        "type": kind,
        "payload": payload or dict(DEFAULT_PAYLOADS[kind]),
    }


@dataclass
class Harness:
    driver: ScriptedDriver
    targets: list[FakeMemoryTarget]
    ledgers: CommandLedgers
    worker: CommandWorker
    receipts: list[CommandReceipt] = field(default_factory=list)
    failures: list[CommandTaskFailure] = field(default_factory=list)
    refreshes: list[tuple[str, str, str]] = field(default_factory=list)  # (target, source, session)

    @property
    def target(self) -> FakeMemoryTarget:
        return self.targets[0]


def harness(
    tmp_path: Path, *, sessions: tuple[str, ...] = ("s1", "s2"), targets: int = 1,
    max_sessions: int = 8, driver: ScriptedDriver | None = None, on_receipt: Any = None,
    sole_executor: bool = False,
) -> Harness:
    driver = driver or ScriptedDriver(snapshots=[make_snapshot(s) for s in sessions])
    fakes = [FakeMemoryTarget(f"target-{i}") for i in range(targets)]
    ledgers = CommandLedgers(tmp_path / "ledgers")
    lock = threading.Lock()
    box: dict[str, Harness] = {}

    def record_receipt(receipt: CommandReceipt) -> None:
        box["h"].receipts.append(receipt)
        if on_receipt is not None:
            on_receipt(box["h"], receipt)

    def refresh(target: Any, drv: Any, native_session_id: str) -> None:
        with lock:
            box["h"].refreshes.append((target.space, drv.source.id, native_session_id))

    worker = CommandWorker(
        {"scripted": driver}, fakes, ledgers, record_receipt, lambda f: box["h"].failures.append(f),
        owner_did=OWNER, max_sessions=max_sessions, refresh=refresh, sole_executor=sole_executor,
    )
    box["h"] = Harness(driver, fakes, ledgers, worker)
    return box["h"]

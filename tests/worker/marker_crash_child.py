"""An executor killed after a receipt is published and its marker cleared in memory,
before any later ledger write (test_worker_marker_crash.py).

    python -m tests.worker.marker_crash_child DB IDENTITY LEDGERS RUNS_LOG COMMAND_JSON

Runs the one command with `LoggingDriver` (one line per provider call in RUNS_LOG);
the receipt observer, which runs after the marker is cleared, prints "published" and
blocks, so the parent's SIGKILL lands where the cleared marker is not on disk yet.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from lib.fabric.identity import load_or_create_identity
from lib.fabric.store import open_store
from lib.fabric.target import FabricTarget
from lib.ledger import CommandLedgers
from lib.worker import CommandWorker
from tests.worker.executor_child import LoggingDriver


def main(db: str, identity: str, ledgers_dir: str, runs_log: str, command_json: str) -> None:
    command = json.loads(Path(command_json).read_text())
    owner = load_or_create_identity(Path(identity)).did
    target = FabricTarget.open(open_store(f"sqlite:///{db}"), space=owner, owner=owner)
    driver = LoggingDriver(runs_log, [command["nativeSessionId"]])

    def observed(receipt) -> None:  # noqa: ANN001
        sys.stdout.write(f"published {receipt.status}\n")
        sys.stdout.flush()
        threading.Event().wait()  # killed here

    worker = CommandWorker({"scripted": driver}, [target], CommandLedgers(Path(ledgers_dir)), observed,
                           owner_did=owner, refresh=lambda *_: None, sole_executor=True)
    worker.handle([command])
    threading.Event().wait()


if __name__ == "__main__":
    main(*sys.argv[1:])

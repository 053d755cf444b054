"""One executor process for the two-executor test: a CommandWorker without the executor
lock (as a library user might run two) over a shared SQLite store, with its own ledger.

    python -m tests.worker.executor_child DB IDENTITY LEDGERS RUNS_LOG GO_FILE COMMANDS_JSON

DB is a SQLite file's path, or any store URL (a PostgreSQL store's, say).

Its driver appends one line per provider call to RUNS_LOG (O_APPEND, shared by both
processes). It waits for GO_FILE, so both start handling at once, then handles the
commands and drains; a lost claim is logged on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from lib.fabric.identity import load_or_create_identity
from lib.fabric.store import open_store
from lib.fabric.target import FabricTarget
from lib.ledger import CommandLedgers
from lib.types import CommandExecutionResult
from lib.worker import CommandWorker
from tests.support.scripted_driver import ScriptedDriver
from tests.support.sessions import make_snapshot


class LoggingDriver(ScriptedDriver):
    def __init__(self, log: str, sessions: list[str]) -> None:
        super().__init__(source_id="scripted", snapshots=[make_snapshot(s) for s in sessions])
        self.log = log

    def rename_session(self, native_session_id: str, title: str) -> CommandExecutionResult:
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{title} {os.getpid()}\n".encode())
        finally:
            os.close(fd)
        return CommandExecutionResult(status="succeeded", result={"title": title})


def main(db: str, identity: str, ledgers_dir: str, runs_log: str, go: str, commands_json: str) -> None:
    commands = json.loads(Path(commands_json).read_text())
    owner = load_or_create_identity(Path(identity)).did
    url = db if "://" in db else f"sqlite:///{db}"
    target = FabricTarget.open(open_store(url), space=owner, owner=owner)
    driver = LoggingDriver(runs_log, sorted({c["nativeSessionId"] for c in commands}))
    ledgers = CommandLedgers(Path(ledgers_dir))
    worker = CommandWorker({"scripted": driver}, [target], ledgers, owner_did=owner,
                           refresh=lambda *_: None)
    deadline = time.monotonic() + 60
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            sys.exit("the go file never appeared")
        time.sleep(0.001)
    worker.handle(commands)
    worker.close()


if __name__ == "__main__":
    main(*sys.argv[1:])

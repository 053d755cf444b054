"""The worker clears a published receipt's marker in memory and writes it with the
ledger's next write (docs/command-path.md, session 20). SIGKILL an executor in that
window: the marker is still on disk, recovery publishes the same terminal receipt
again, and the command never runs a second time."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from lib.fabric.identity import load_or_create_identity
from lib.fabric.store import open_store
from lib.fabric.target import FabricTarget
from lib.ledger import CommandLedgers
from lib.worker import CommandWorker
from tests.ledger.helpers import read_json
from tests.worker.executor_child import LoggingDriver
from tests.worker.helpers import command

GUARD = 120


def test_a_crash_after_publication_before_the_marker_is_written_republishes_and_never_reruns(tmp_path: Path):
    identity, db, ledgers_dir, runs = (tmp_path / n for n in ("identity.json", "fabric.db", "ledgers", "runs.log"))
    owner = load_or_create_identity(identity).did
    cmd = command("c1", "rename", "s1", owner=owner, title="c1")
    (tmp_path / "command.json").write_text(json.dumps(cmd))
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.worker.marker_crash_child", str(db), str(identity), str(ledgers_dir),
         str(runs), str(tmp_path / "command.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = child.stdout.readline()
        assert line == "published succeeded\n", child.stderr.read()
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait(GUARD)
        child.stdout.close()
        child.stderr.close()

    # the window was hit: the terminal receipt is on disk with its marker still set
    slots = [read_json(p) for p in ledgers_dir.glob("owner.json*") if not p.name.endswith(".lock")]
    newest = max(slots, key=lambda doc: doc["generation"])
    assert newest["pendingPublicationCommandIds"] == ["c1"]
    assert newest["receipts"]["c1"]["status"] == "succeeded"

    target = FabricTarget.open(open_store(f"sqlite:///{db}"), space=owner, owner=owner)
    published = target.read_receipt("c1")
    assert published is not None and published.status == "succeeded"
    ledgers = CommandLedgers(ledgers_dir)
    worker = CommandWorker({"scripted": LoggingDriver(str(runs), ["s1"])}, [target], ledgers,
                           owner_did=owner, refresh=lambda *_: None, sole_executor=True)
    try:
        recovered = worker.recover_unpublished_receipts()
        assert [r.to_wire() for r in recovered] == [published.to_wire()]  # the same receipt, again
        assert ledgers.pending_publication_count() == 0
        worker.handle([cmd])  # delivered again: never run again
        worker.drain()
    finally:
        worker.close()
        ledgers.close()
    assert runs.read_text().splitlines() == [f"c1 {child.pid}"]  # one provider call, the first process's
    assert target.read_receipt("c1").to_wire() == published.to_wire()
    with CommandLedgers(ledgers_dir) as reopened:
        assert reopened.pending_publication_count() == 0  # recovery's clear is on disk
    target.store.close()

"""The refresh after an outcome (`RefreshBatches.refresh_later`): a batch already waiting
that reads the same session serves it; otherwise it is published in a batch after."""

from __future__ import annotations

import threading
from pathlib import Path

from lib.ledger import CommandLedgers
from lib.pipeline.refresh_batches import RefreshBatches
from lib.worker import CommandWorker
from tests.fabric.target_helpers import make_env, rows, snapshot
from tests.support.scripted_driver import ScriptedDriver
from tests.test_group_commit_later import _NotedWait
from tests.worker.helpers import OWNER, command

GUARD = 60


def _driver(*ids: str) -> ScriptedDriver:
    return ScriptedDriver(source_id="codex", kind="codex-app-server", snapshots=[snapshot(i) for i in ids])


def _run(call, *args) -> threading.Thread:
    thread = threading.Thread(target=call, args=args)
    thread.start()
    return thread


def _later_behind_a_waiting_batch(tmp_path: Path, waiting_session: str, later_session: str) -> ScriptedDriver:
    """ "a" publishing (its read held), `waiting_session` waiting for the next batch, then
    `refresh_later(later_session)`; every thread joined once the read is let go."""
    target = make_env(tmp_path).target()
    driver = _driver("a", "b", "c")
    batches = RefreshBatches()
    held = driver.gate("read", "a")
    first = _run(batches.refresh, target, driver, "a")
    held.wait_reached()
    waiting = _run(batches.refresh, target, driver, waiting_session)
    group = batches._targets[id(target)]
    while group.queued() < 1:
        threading.Event().wait(0.005)
    noted = threading.Event()
    group._open.begun = _NotedWait(noted)
    later = _run(batches.refresh_later, target, driver, later_session)
    assert noted.wait(GUARD)  # the refresh after waits for the waiting batch to begin
    held.open()
    for thread in (first, waiting, later):
        thread.join(GUARD)
        assert not thread.is_alive()
    assert set(rows(target)) == {f"codex/{s}" for s in {"a", waiting_session, later_session}}
    return driver


def test_a_waiting_batch_that_reads_the_same_session_serves_the_refresh_after(tmp_path: Path) -> None:
    driver = _later_behind_a_waiting_batch(tmp_path, "b", "b")
    assert [call[1] for call in driver.calls_of("read")] == ["a", "b"]  # b read once, for both


def test_a_refresh_after_no_waiting_batch_covers_reads_its_session_in_a_batch_after_them(tmp_path: Path) -> None:
    driver = _later_behind_a_waiting_batch(tmp_path, "b", "c")
    assert [call[1] for call in driver.calls_of("read")] == ["a", "b", "c"]


def test_the_worker_refreshes_after_an_outcome_through_refresh_after_and_while_active_through_refresh(tmp_path: Path):
    env = make_env(tmp_path)
    target = env.target()
    driver = ScriptedDriver(snapshots=[snapshot("s1")], source_id="scripted")
    seen: list[str] = []
    worker = CommandWorker(
        {"scripted": driver}, [target], CommandLedgers(tmp_path / "ledgers"), owner_did=OWNER,
        refresh=lambda t, d, s: seen.append(f"active {s}"), refresh_after=lambda t, d, s: seen.append(f"after {s}"),
    )
    try:
        worker.handle([command("p1")])
        worker.drain()
    finally:
        worker.close()
        worker.ledgers.close()
    assert seen == ["active s1", "after s1"]

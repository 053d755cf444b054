"""`agentctl health` as a real process, against a store where the test published a
health record (and, for a running host, holds the executor lock itself)."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lib.fabric.store import open_store
from lib.health import HostHealth
from lib.workspace import Workspace
from tests.fabric.target_helpers import Clock, descriptor
from tests.support.cli import agentctl_env, run, run_on_terminal

PUBLISHED_AT = datetime(2026, 7, 1, 12, 0, 0, tzinfo=UTC)
NOW = "2026-07-01T12:01:30Z"  # 90 s after the record's last change


def host_health(degraded: bool = False) -> HostHealth:
    h = HostHealth(pid=os.getpid(), hostname=socket.gethostname(), version="0.1.0", interval_seconds=300,
                   cells={"recentIndex": "of:recent"}, clock=Clock(PUBLISHED_AT))
    h.source_starting(descriptor("codex"))
    h.source_running(descriptor("codex"))
    h.collection_started()
    h.collection_finished({"complete": True, "sessionCount": 3,
                           "sources": [{"sourceId": "codex", "complete": True, "listed": 3, "errorCount": 0}],
                           "errors": []})
    h.set_status("running")
    h.admitting(True)
    h.event("started", "host started")
    if degraded:
        h.source_failed("claude", "driver-unavailable", "claude did not start")
    return h


@pytest.fixture
def setup(tmp_path: Path):
    state = tmp_path / "state"
    env = agentctl_env(state, AGENTCTL_CLOCK=NOW)
    workspace = Workspace(config_path=env["AGENTCTL_CONFIG"], state_dir=str(state))
    yield env, workspace
    workspace.close()


def publish(workspace: Workspace, health: HostHealth) -> None:
    workspace.open_target().publish_health(health.record())


def holding_the_executor_lock(workspace: Workspace):
    store = open_store(workspace.resolved_store_url)
    lock = store.lock(workspace.space_did, "executor")
    lock.acquire(timeout=0)
    return store, lock


def test_nothing_published_exits_5(setup):
    env, _workspace = setup
    result = run(["health"], env)
    assert result.returncode == 5
    assert "no health published; is agentctl serve running?" in result.stderr
    assert result.stdout == ""


def test_an_empty_store_has_nothing_published(setup):
    env, workspace = setup
    workspace.open_target()  # the roots, with the empty health root
    assert run(["health"], env).returncode == 5


def test_a_ready_host_holding_the_lock_exits_0_with_json_when_piped(setup):
    env, workspace = setup
    publish(workspace, host_health())
    store, lock = holding_the_executor_lock(workspace)
    try:
        result = run(["health"], env)
    finally:
        lock.release()
        store.close()
    assert result.returncode == 0, result.stderr
    [record] = result.records
    assert record["record"] == "health"
    assert record["status"] == "ready"
    assert record["hostRunning"] is True
    assert record["ageSeconds"] == 90.0
    assert record["sources"][0]["id"] == "codex"
    assert record["sources"][0]["sessionCount"] == 3
    assert record["schema"] == "commonfabric.agent-connector.health"
    assert [e["kind"] for e in record["activity"]][-1] == "started"


def test_the_same_record_without_a_holder_is_stale_and_exits_1(setup):
    env, workspace = setup
    publish(workspace, host_health())
    result = run(["health"], env)
    assert result.returncode == 1
    [record] = result.records
    assert record["hostRunning"] is False and record["status"] == "ready"
    shown = run_on_terminal(["health"], env)
    assert shown.returncode == 1
    assert "the record is 90 seconds old and no host holds the executor lock" in shown.stdout


def test_a_degraded_host_exits_3_and_says_why_on_a_terminal(setup):
    env, workspace = setup
    publish(workspace, host_health(degraded=True))
    store, lock = holding_the_executor_lock(workspace)
    try:
        shown = run_on_terminal(["health"], env, columns=120)
        piped = run(["health"], env)
    finally:
        lock.release()
        store.close()
    assert shown.returncode == 3 and piped.returncode == 3
    assert shown.stdout.startswith("status: degraded since 2026-07-01T12:00:00.000Z")
    assert "not ready: source claude failed (driver-unavailable)" in shown.stdout
    assert "codex: running, complete, 3 sessions" in shown.stdout
    assert "claude: failed" in shown.stdout
    assert "commands: admitting, 0 receipt publication(s) pending, 0 failed" in shown.stdout
    assert "no host holds" not in shown.stdout
    assert piped.records[0]["status"] == "degraded"


def test_json_on_a_terminal_with_the_flag(setup):
    env, workspace = setup
    publish(workspace, host_health())
    shown = run_on_terminal(["health", "--json"], env, columns=2000)
    assert shown.returncode == 1
    assert shown.stdout.lstrip().startswith('{"record":"health"') or '"record": "health"' in shown.stdout


def test_a_stopped_host_exits_1(setup):
    env, workspace = setup
    h = host_health()
    h.set_status("stopping")
    h.set_status("stopped")
    publish(workspace, h)
    result = run(["health"], env)
    assert result.returncode == 1
    assert result.records[0]["status"] == "stopped"

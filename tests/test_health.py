"""HostHealth: the status rules, the activity cap, what command events may hold, and a
publish/read round trip through a real SQLite FabricTarget."""

from __future__ import annotations

import json
import os
import socket
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lib.fabric.graph_read import read_graph_value
from lib.fabric.store import open_store
from lib.health import MAX_ACTIVITY, MAX_SOURCE_ERRORS, HostHealth
from lib.health_view import HealthView, published_health, read_health
from lib.receipts import CommandReceipt, ReceiptError
from lib.workspace import Workspace
from tests.fabric.target_helpers import SPACE, Clock, descriptor, make_env

CELLS = {"recentIndex": "of:recent", "allIndex": "of:all", "receipts": "of:receipts"}
COMMAND_EVENT_FIELDS = {"seq", "at", "kind", "commandId", "producer", "status", "sourceId", "nativeSessionId"}


def health(clock: Clock | None = None) -> HostHealth:
    return HostHealth(pid=4242, hostname="box", version="0.1.0", interval_seconds=300,
                      cells=dict(CELLS), clock=clock or Clock())


def ready_health(clock: Clock | None = None) -> HostHealth:
    h = health(clock)
    h.source_starting(descriptor("codex"))
    h.source_running(descriptor("codex"))
    h.set_status("running")
    h.admitting(True)
    return h


def receipt(command_id: str, status: str, **extra) -> CommandReceipt:
    return CommandReceipt(command_id=command_id, source_id="codex", native_session_id="s1", status=status, **extra)


def test_a_new_host_is_starting():
    record = health().record()
    assert record["status"] == "starting"
    assert record["reasons"] == ["host is starting"]
    assert record["host"] == {"pid": 4242, "hostname": "box", "version": "0.1.0",
                              "startedAt": "2026-07-01T12:00:00.000Z", "updatedAt": "2026-07-01T12:00:00.000Z"}
    assert record["cells"] == CELLS
    assert record["commands"] == {"admitting": False, "pendingReceiptPublications": 0,
                                  "failedCommands": 0, "lastError": None}
    assert record["collection"]["intervalSeconds"] == 300
    assert record["collection"]["lastError"] is None
    assert record["sources"] == [] and record["activity"] == []
    json.dumps(record)  # plain JSON


def test_ready_only_when_running_admitting_and_nothing_failed_or_pending():
    h = ready_health()
    assert h.record()["status"] == "ready"
    assert h.record()["reasons"] == []
    source = h.record()["sources"][0]
    assert source["id"] == "codex" and source["driver"] == "codex-app-server"
    assert source["lifecycle"] == "running"
    assert source["capabilities"] == descriptor("codex").capabilities.to_wire()


@pytest.mark.parametrize("break_it, reason", [
    (lambda h: h.admitting(False), "not admitting commands"),
    (lambda h: h.source_failed("codex", "driver-unavailable", "no codex"), "source codex failed (driver-unavailable)"),
    (lambda h: h.pending_receipts(2), "2 receipt publication(s) pending"),
    (lambda h: h.collection_failed("store-unavailable", "gone"), "last collection failed (store-unavailable)"),
])
def test_degraded_when_any_readiness_condition_fails(break_it, reason):
    h = ready_health()
    break_it(h)
    record = h.record()
    assert record["status"] == "degraded"
    assert record["reasons"] == [reason]


def test_degraded_returns_to_ready_when_the_cause_clears():
    clock = Clock()
    h = ready_health(clock)
    h.pending_receipts(1)
    clock.advance(seconds=5)
    h.pending_receipts(0)
    record = h.record()
    assert record["status"] == "ready"
    assert record["since"] == "2026-07-01T12:00:05.000Z"


def test_a_finished_collection_clears_a_failed_one_and_fills_the_sources():
    h = ready_health()
    h.collection_started()
    assert h.record()["collection"]["running"] is True
    h.collection_failed("store-unavailable", "the store is gone")
    assert h.record()["status"] == "degraded"
    h.collection_started()
    h.collection_finished({
        "complete": False, "sessionCount": 7,
        "sources": [{"sourceId": "codex", "complete": False, "listed": 7, "errorCount": 1}],
        "errors": [{"sourceId": "codex", "code": "read-failed", "message": "session s9 unreadable"},
                   {"code": "git-failed", "message": "no git"}],
    })
    record = h.record()
    assert record["status"] == "ready"  # an incomplete collection did not fail
    collection = record["collection"]
    assert (collection["running"], collection["lastComplete"], collection["lastSessionCount"]) == (False, False, 7)
    assert collection["lastError"] is None
    source = record["sources"][0]
    assert (source["complete"], source["sessionCount"]) == (False, 7)
    assert [e["code"] for e in source["errors"]] == ["read-failed"]


def test_stopping_and_stopped_are_not_ready():
    h = ready_health()
    h.set_status("stopping")
    assert h.record()["status"] == "stopping"
    h.set_status("stopped")
    assert h.record()["status"] == "stopped"
    assert h.record()["reasons"] == ["host stopped"]
    with pytest.raises(ValueError):
        h.set_status("ready")


def test_version_moves_on_every_change_and_not_on_a_repeat():
    h = health()
    before = h.version
    h.admitting(False)  # already so
    h.pending_receipts(0)
    h.collection_pending(False)
    assert h.version == before
    h.admitting(True)
    assert h.version == before + 1
    h.event("sighup", "collection requested")
    assert h.version == before + 2


def test_activity_keeps_the_newest_200_oldest_first_with_increasing_seq():
    h = health()
    for i in range(MAX_ACTIVITY + 50):
        h.event("tick", f"tick {i}", n=i)
    activity = h.record()["activity"]
    assert len(activity) == MAX_ACTIVITY
    assert activity[0]["n"] == 50 and activity[-1]["n"] == MAX_ACTIVITY + 49
    seqs = [e["seq"] for e in activity]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert activity[-1]["kind"] == "tick" and activity[-1]["message"] == f"tick {MAX_ACTIVITY + 49}"


def test_a_source_keeps_its_newest_20_errors():
    h = health()
    for i in range(MAX_SOURCE_ERRORS + 5):
        h.source_failed("codex", f"e{i}", "failed")
    errors = h.record()["sources"][0]["errors"]
    assert [e["code"] for e in errors] == [f"e{i}" for i in range(5, MAX_SOURCE_ERRORS + 5)]


def test_command_events_hold_identities_and_status_only():
    h = ready_health()
    h.command_receipt(receipt("c1", "in-flight", producer="pattern-a"))
    h.command_receipt(receipt("c1", "succeeded", producer="pattern-a",
                              result={"text": "SECRET ANSWER"}, provider_operation_id="op-1"))
    h.command_receipt(receipt("c2", "failed", error=ReceiptError(code="provider-failed", message="boom",
                                                                  retryable=False)))
    h.command_task_failed("c3", None, "codex", "s1", "task-crashed", "RuntimeError")
    events = [e for e in h.record()["activity"] if e["kind"] in ("command", "command-task-failed")]
    assert len(events) == 4
    for event in events:
        assert set(event) <= COMMAND_EVENT_FIELDS, event
    assert [e["status"] for e in events] == ["in-flight", "succeeded", "failed", "failed"]
    assert "SECRET ANSWER" not in json.dumps(h.record())
    assert "op-1" not in json.dumps(h.record())


def test_failed_and_unknown_receipts_count_as_failed_commands():
    clock = Clock()
    h = ready_health(clock)
    h.command_receipt(receipt("c1", "succeeded"))
    h.command_receipt(receipt("c2", "unsupported"))
    assert h.record()["commands"]["failedCommands"] == 0
    h.command_receipt(receipt("c3", "unknown"))
    clock.advance(seconds=1)
    h.command_receipt(receipt("c4", "failed", error=ReceiptError(code="provider-failed", message="boom",
                                                                  retryable=False)))
    commands = h.record()["commands"]
    assert commands["failedCommands"] == 2
    assert commands["lastError"] == {"code": "provider-failed", "message": "boom", "at": "2026-07-01T12:00:01.000Z"}
    h.command_task_failed("c5", "p", "codex", "s1", "task-crashed", "it broke")
    assert h.record()["commands"]["failedCommands"] == 3
    assert h.record()["commands"]["lastError"]["code"] == "task-crashed"
    assert h.record()["status"] == "ready"  # failed commands do not make the host degraded


def test_the_record_holds_nothing_of_a_provider_environment():
    env = {"OPENAI_API_KEY": "sk-very-secret", "HTTPS_PROXY": "http://user:pw@proxy:3128"}
    h = ready_health()
    h.source_failed("codex", "driver-unavailable", "codex did not start")
    h.collection_started()
    h.collection_finished({"complete": True, "sessionCount": 1,
                           "sources": [{"sourceId": "codex", "complete": True, "listed": 1, "errorCount": 0}],
                           "errors": []})
    text = json.dumps(h.record())
    for key, value in env.items():
        assert key not in text and value not in text


def test_long_messages_are_cut():
    h = health()
    h.source_failed("codex", "x", "y" * 10_000)
    assert len(h.record()["sources"][0]["errors"][0]["message"]) <= 500


def test_the_record_is_detached():
    h = ready_health()
    record = h.record()
    record["sources"][0]["lifecycle"] = "mangled"
    record["cells"]["recentIndex"] = "mangled"
    assert h.record()["sources"][0]["lifecycle"] == "running"
    assert h.record()["cells"]["recentIndex"] == "of:recent"


def test_threads_reporting_at_once_lose_nothing():
    h = ready_health()
    before = h.version

    def report(n: int) -> None:
        for i in range(100):
            h.command_receipt(receipt(f"t{n}-{i}", "failed"))

    threads = [threading.Thread(target=report, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert h.record()["commands"]["failedCommands"] == 800
    assert h.version == before + 800
    seqs = [e["seq"] for e in h.record()["activity"]]
    assert seqs == sorted(seqs) and len(seqs) == MAX_ACTIVITY


def test_publish_and_read_back_through_a_sqlite_target(tmp_path: Path):
    env = make_env(tmp_path)
    target = env.target()
    assert published_health(target) is None  # only the empty root
    h = ready_health(env.clock)
    for i in range(5):
        h.command_receipt(receipt("c1" if i < 2 else f"c{i}", "succeeded"))
    h.source_failed("claude", "driver-unavailable", "no claude")
    h.source_failed("claude", "driver-unavailable", "no claude")  # the same error twice
    for _ in range(3):
        h.event("tick", "same message")
    record = h.record()
    target.publish_health(record)
    back = read_graph_value(env.store, SPACE, target.health_cell_id())
    assert back == {**record, "schema": "commonfabric.agent-connector.health", "ownerDid": env.owner}
    reader = env.target(read_only=True)
    assert published_health(reader) == back
    # publishing again after a change replaces it
    h.set_status("stopped")
    target.publish_health(h.record())
    assert published_health(reader)["status"] == "stopped"
    assert published_health(reader)["activity"] == h.record()["activity"]


def test_the_view_exit_codes():
    record = ready_health().record()
    holder = {"pid": 4242, "hostname": "box"}
    assert HealthView(None, None, False, None).exit_code == 5
    assert HealthView(record, 1.0, True, holder).exit_code == 0
    assert HealthView(record, 1.0, True, None).exit_code == 0  # holder unknown: trust the lock
    assert HealthView(record, 90.0, False, None).exit_code == 1  # stale
    assert HealthView(record, 90.0, True, {"pid": 1, "hostname": "box"}).exit_code == 1  # another holder
    assert HealthView({**record, "status": "degraded"}, 1.0, True, holder).exit_code == 3
    assert HealthView({**record, "status": "starting"}, 1.0, True, holder).exit_code == 3
    assert HealthView({**record, "status": "stopped"}, 1.0, False, None).exit_code == 1
    wire = HealthView(record, 1.5, True, holder).to_wire()
    assert wire["ageSeconds"] == 1.5 and wire["hostRunning"] is True and wire["status"] == "ready"


def test_read_health_in_process_sees_the_lock_and_its_holder(tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text("")
    workspace = Workspace(config_path=str(config), state_dir=str(tmp_path / "state"))
    try:
        assert read_health(workspace).record is None  # no store: nothing created
        assert not (tmp_path / "state" / "fabric.sqlite3").exists()
        h = HostHealth(pid=os.getpid(), hostname=socket.gethostname(), version="0.1.0",
                       interval_seconds=0, cells={}, clock=Clock())
        h.set_status("running")
        h.admitting(True)
        workspace.open_target().publish_health(h.record())
        later = datetime(2026, 7, 1, 12, 0, 42, tzinfo=UTC)
        view = read_health(workspace, now=later)
        assert (view.status, view.age_seconds, view.lock_held, view.exit_code) == ("ready", 42.0, False, 1)
        with open_store(workspace.resolved_store_url) as store, store.lock(workspace.space_did, "executor"):
            view = read_health(workspace, now=later)
            assert view.lock_held and view.host_running and view.exit_code == 0
            assert view.lock_holder == {"pid": os.getpid(), "hostname": socket.gethostname()}
        # the check released the lock: an executor can take it
        with open_store(workspace.resolved_store_url) as store:
            lock = store.lock(workspace.space_did, "executor", timeout=0)
            lock.acquire()
            lock.release()
    finally:
        workspace.close()

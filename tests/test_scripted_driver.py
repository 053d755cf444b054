"""The fake in-memory driver behaves as the scripts say, so other tests can trust it."""

from __future__ import annotations

import json
import threading

import pytest

from lib.drivers.base import DriverError
from lib.types import (
    AgentSourceConfig,
    CommandExecutionOptions,
    CommandExecutionResult,
    DriverCapabilities,
    PromptInput,
    StartInput,
)
from tests.support.scripted_driver import PromptScript, ScriptedDriver, make_snapshot
from tests.support.scripted_driver_file import load_scripted_driver


def test_a_fake_driver_pages_its_sessions_by_cursor():
    driver = ScriptedDriver(snapshots=[make_snapshot(i) for i in "abc"], page_size=2)
    first = driver.list_sessions()
    second = driver.list_sessions(first.next_cursor)
    assert [s.native_session_id for s in first.sessions] == ["a", "b"]
    assert [s.native_session_id for s in second.sessions] == ["c"]
    assert second.next_cursor is None
    with pytest.raises(DriverError) as raised:
        driver.list_sessions("nowhere")
    assert raised.value.code == "invalid-cursor"


def test_a_fake_read_returns_a_fresh_copy_each_time():
    driver = ScriptedDriver(snapshots=[make_snapshot("a")])
    first = driver.read_session("a")
    first.events.clear()
    assert len(driver.read_session("a").events) == 2
    assert first is not driver.read_session("a")


def test_a_fake_gate_holds_a_call_until_the_test_opens_it():
    driver = ScriptedDriver(snapshots=[make_snapshot("a")])
    gate = driver.gate("read", "a")
    results = []
    reader = threading.Thread(target=lambda: results.append(driver.read_session("a")))
    reader.start()
    gate.wait_reached()
    assert results == [] and driver.calls == [("read", "a")]
    gate.open()
    reader.join()
    assert results[0].summary.native_session_id == "a"


def test_a_fake_prompt_reports_its_milestones_in_order_and_appends_the_exchange():
    driver = ScriptedDriver(
        snapshots=[make_snapshot("a")], prompts={"a": PromptScript(reply="done")}
    )
    seen = []
    options = CommandExecutionOptions(
        on_cancellation_ready=lambda: seen.append("ready"),
        on_session_active=lambda: seen.append(("active", driver.read_session("a").summary.active)),
    )
    result = driver.prompt("a", PromptInput(text="hello"), options)
    assert seen == ["ready", ("active", True)]
    assert result.status == "succeeded" and result.provider_operation_id == "turn-1"
    events = driver.read_session("a").events
    assert [e["text"] for e in events[-2:]] == ["hello", "done"]
    assert driver.read_session("a").summary.active is None


def test_a_fake_prompt_running_behind_its_gate_is_ended_by_cancel():
    driver = ScriptedDriver(snapshots=[make_snapshot("a")])
    running = driver.gate("prompt-running", "a")
    results = []
    worker = threading.Thread(
        target=lambda: results.append(driver.prompt("a", PromptInput(text="long")))
    )
    worker.start()
    running.wait_reached()
    assert driver.cancel("a").status == "succeeded"
    worker.join()
    assert results[0].status == "failed" and results[0].error.code == "cancelled"
    assert driver.cancel("a").error.code == "no-active-prompt"


def test_a_fake_prompt_that_fails_before_ready_never_calls_the_milestones():
    driver = ScriptedDriver(
        snapshots=[make_snapshot("a")], prompts={"a": PromptScript(fail_before_ready=True)}
    )
    seen = []
    result = driver.prompt(
        "a",
        PromptInput(text="x"),
        CommandExecutionOptions(on_cancellation_ready=lambda: seen.append(1)),
    )
    assert result.status == "failed" and seen == []


def test_a_fake_prompt_pending_when_the_driver_stops_raises():
    driver = ScriptedDriver(snapshots=[make_snapshot("a")])
    running = driver.gate("prompt-running", "a")
    errors = []

    def prompt():
        try:
            driver.prompt("a", PromptInput(text="x"))
        except DriverError as exc:
            errors.append(exc.code)

    worker = threading.Thread(target=prompt)
    worker.start()
    running.wait_reached()
    driver.stop()
    worker.join()
    assert errors == ["provider-exited"]


def test_a_fake_rename_shows_in_the_next_list_and_read():
    driver = ScriptedDriver(snapshots=[make_snapshot("a")])
    assert driver.rename_session("a", "New").status == "succeeded"
    assert driver.list_sessions().sessions[0].title == "New"
    assert driver.read_session("a").summary.title == "New"
    assert driver.rename_session("zz", "x").error.code == "session-not-found"


def test_a_fake_start_creates_a_listed_session_only_when_the_capability_is_on():
    driver = ScriptedDriver()
    assert driver.start_session("n", StartInput(text="hi")).status == "unsupported"
    driver.source.capabilities = DriverCapabilities(
        list_sessions=True, read_session=True, start_session=True
    )
    assert driver.start_session("n", StartInput(text="hi", title="T")).status == "succeeded"
    assert [s.title for s in driver.list_sessions().sessions] == ["T"]
    assert [e["text"] for e in driver.read_session("n").events] == ["hi", "ok"]


def test_a_scripted_result_overrides_a_fake_command():
    failed = CommandExecutionResult.failure("failed", "busy", "busy")
    driver = ScriptedDriver(snapshots=[make_snapshot("a")], results={("rename", "a"): failed})
    assert driver.rename_session("a", "x").error.code == "busy"
    assert driver.set_mode("a", "plan").status == "unsupported"


def test_a_fake_driver_loads_from_a_json_script_file_per_source(tmp_path):
    script = {
        "sources": {
            "codex": {
                "sessions": [make_snapshot("a").to_wire(), make_snapshot("b").to_wire()],
                "pages": [
                    {"cursor": None, "sessions": ["a"], "nextCursor": "next"},
                    {"cursor": "next", "sessions": [{"nativeSessionId": "b", "archived": True}]},
                ],
                "listFaults": [{"cursor": "broken", "code": "rpc-error", "message": "no"}],
                "readFaults": [{"nativeSessionId": "b", "code": "thread-gone", "message": "gone"}],
                "prompts": [{"nativeSessionId": "a", "reply": "hi there"}],
                "results": [
                    {
                        "operation": "cancel",
                        "nativeSessionId": "a",
                        "result": {"status": "unknown"},
                    }
                ],
            }
        }
    }
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    driver = load_scripted_driver(path, AgentSourceConfig(id=" Codex ", driver="codex-app-server"))
    assert driver.source.id == "codex"
    assert driver.list_sessions("next").sessions[0].archived is True
    with pytest.raises(DriverError):
        driver.list_sessions("broken")
    with pytest.raises(DriverError) as raised:
        driver.read_session("b")
    assert raised.value.code == "thread-gone"
    assert driver.prompt("a", PromptInput(text="x")).result == {"reply": "hi there"}
    assert driver.cancel("a").status == "unknown"


def test_a_fake_driver_built_from_one_script_names_its_source_and_pages_by_size():
    driver = ScriptedDriver.from_dict(
        {
            "source": {"id": "acp-one", "driver": "acp"},
            "capabilities": {"listSessions": True, "readSession": True, "modes": ["plan"]},
            "sessions": [make_snapshot(i).to_wire() for i in "abc"],
            "pageSize": 2,
        }
    )
    assert (driver.source.id, driver.source.driver) == ("acp-one", "acp")
    assert driver.source.capabilities.modes == ["plan"]
    first = driver.list_sessions()
    assert len(first.sessions) == 2 and first.next_cursor == "page-2"

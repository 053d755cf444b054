"""The ACP driver's start-up, inventory, reads and learned controls, over the project's
test agent (tests/support/acp_test_agent.py, the SDK's agent side) as a real child."""

from __future__ import annotations

import os
import sys

import pytest

from lib.drivers.acp import AcpConfigError, AcpDriver
from lib.drivers.base import DriverError, DriverUnavailable
from lib.types import AgentSourceConfig
from tests.support.acp_drivers import agent_world, in_background

SEEDED = ["seed-004", "seed-003", "seed-002", "seed-001", "seed-000"]  # newest first


@pytest.fixture
def agents(tmp_path):
    yield from agent_world(tmp_path)


# -- start-up ---------------------------------------------------------------------------


def test_start_initializes_with_the_sdk_protocol_version_and_the_connector_name(agents):
    from acp import PROTOCOL_VERSION

    driver = agents.driver("--seed", "1")
    sent = agents.initialize()
    assert sent["protocolVersion"] == PROTOCOL_VERSION
    assert sent["clientInfo"]["name"] == "commonfabric-agents-connector"
    assert sent["clientCapabilities"]["session"] == {"configOptions": {"boolean": {}}}
    assert driver.source.provider_version == "0.1.0"
    caps = driver.source.capabilities
    assert (caps.list_sessions, caps.read_session, caps.prompt, caps.cancel) == (True, True, True, True)
    assert caps.rename_session is False and caps.start_session is True


def test_the_agent_runs_in_the_source_cwd_with_the_sdk_environment_and_the_source_env(agents, tmp_path,
                                                                                         monkeypatch):
    monkeypatch.setenv("AGENTCTL_TEST_SECRET", "not for the agent")
    workdir = tmp_path / "work"
    workdir.mkdir()
    agents.driver(cwd=workdir, env={"MY_AGENT_SETTING": "on"})
    sent = agents.initialize()
    assert sent["cwd"] == str(workdir)
    assert "MY_AGENT_SETTING" in sent["environment"]
    assert "AGENTCTL_TEST_SECRET" not in sent["environment"]
    assert set(sent["environment"]) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "MY_AGENT_SETTING",
                                        "LC_CTYPE"}  # LC_CTYPE: Python's own C-locale coercion


@pytest.mark.parametrize("missing", ["--no-list", "--no-load"])
def test_start_fails_clearly_when_the_agent_lacks_session_listing_or_loading(agents, missing):
    driver = agents.driver(missing, start=False)
    with pytest.raises(DriverUnavailable) as info:
        driver.start()
    what = "session/list" if missing == "--no-list" else "session/load"
    assert info.value.code == "agent-lacks-sessions" and what in info.value.message
    assert "source acp" in info.value.message
    with pytest.raises(DriverError) as after:  # stopped: nothing left running to call
        driver.list_sessions()
    assert after.value.code == "driver-stopped"


def test_a_source_without_command_is_refused_when_the_driver_is_created():
    with pytest.raises(AcpConfigError) as info:
        AcpDriver(AgentSourceConfig(id="work", driver="acp"))
    assert info.value.code == "missing-command" and info.value.exit_code == 2


def test_a_missing_agent_program_is_unavailable_naming_it(tmp_path):
    driver = AcpDriver(AgentSourceConfig(id="work", driver="acp", command=[str(tmp_path / "no-agent")]))
    with pytest.raises(DriverUnavailable) as info:
        driver.start()
    assert info.value.code == "program-not-found" and "no-agent" in info.value.message


# -- inventory --------------------------------------------------------------------------


def test_list_pages_pass_the_agent_cursors_through(agents):
    driver = agents.driver("--seed", "5", "--page-size", "2")
    ids, cursors, cursor = [], [], None
    while True:
        page = driver.list_sessions(cursor)
        ids += [s.native_session_id for s in page.sessions]
        if page.next_cursor is None:
            break
        cursors.append(page.next_cursor)
        cursor = page.next_cursor
    assert ids == SEEDED
    # the test agent's own opaque cursors, unchanged
    import base64
    assert [base64.urlsafe_b64decode(c).decode() for c in cursors] == ["off:2", "off:4"]
    first = driver.list_sessions().sessions[0]
    assert (first.title, first.cwd, first.updated_at) == ("Seeded session 4", "/tmp/project-a",
                                                           "2025-01-01T04:00:00Z")
    assert first.raw["sessionId"] == "seed-004" and first.active is None


# -- reads ------------------------------------------------------------------------------


def test_a_read_records_every_update_of_the_load_in_order_and_none_sent_after_it(agents):
    driver = agents.driver("--seed", "2")
    snapshot = driver.read_session("seed-001")
    kinds = [event["sessionUpdate"] for event in snapshot.events]
    assert kinds == ["user_message_chunk", "agent_thought_chunk", "plan", "tool_call", "tool_call_update",
                     "agent_message_chunk", "agent_message_chunk"]
    # available_commands_update comes right after the load's answer: no part of the read
    assert "available_commands_update" not in kinds
    assert snapshot.events[0] == {"sessionUpdate": "user_message_chunk",
                                  "content": {"type": "text", "text": "Hello #1"}}
    assert snapshot.complete and snapshot.summary.native_session_id == "seed-001"
    assert snapshot.summary.cwd == "/tmp/project-b"  # from the listing the read looked up
    # A read right after another may also hold what the agent sent after the first
    # load's answer (ACP updates name only the session); the replay is all there again.
    again = driver.read_session("seed-001")
    assert [e for e in again.events if e["sessionUpdate"] != "available_commands_update"] == snapshot.events


def test_normalized_messages_come_from_the_update_kinds(agents):
    driver = agents.driver("--seed", "1")
    messages = driver.read_session("seed-000").normalized_messages
    view = [(m.role, m.kind, m.text, m.event_index) for m in messages]
    assert view == [
        ("user", "user_message_chunk", "Hello #0", 0),
        ("assistant", "agent_thought_chunk", "Thinking about the greeting.", 1),
        ("assistant", "plan", "[completed] Read README\n[in_progress] Answer", 2),
        ("tool", "tool_call", "Read README.md [pending]", 3),
        ("tool", "tool_call_update", "[completed] # README\n", 4),
        ("assistant", "agent_message_chunk", "Hi there, this is reply #0.", 5),  # two chunks, one message
    ]
    assert len({m.id for m in messages}) == len(messages)
    assert messages[3].id == "call-0#3"


def test_loads_of_one_session_run_one_at_a_time(agents):
    driver = agents.driver("--seed", "1")
    threads = [in_background(driver.read_session, "seed-000") for _ in range(4)]
    for thread, _ in threads:
        thread.join(60)
    # Each read holds the whole replay. (An update the agent sends after one load's answer
    # can land in the next load of the session: ACP updates name only the session.)
    for _, outcome in threads:
        history = [e for e in outcome["value"].events if e["sessionUpdate"] != "available_commands_update"]
        assert len(history) == 7
    log = agents.loads()
    assert log == ["begin seed-000", "end seed-000"] * 4  # never two begins in a row


def test_loads_of_different_sessions_overlap(agents):
    # Every load waits until two are in flight at once: serialised loads never answer.
    driver = agents.driver("--seed", "2", "--load-barrier", "2")
    first, one = in_background(driver.read_session, "seed-000")
    second, two = in_background(driver.read_session, "seed-001")
    first.join(60)
    second.join(60)
    assert not first.is_alive() and not second.is_alive(), "loads of different sessions were serialised"
    assert one["value"].summary.native_session_id == "seed-000"
    assert two["value"].summary.native_session_id == "seed-001"
    assert sorted(agents.loads()[:2]) == ["begin seed-000", "begin seed-001"]


def test_a_read_of_a_session_the_agent_does_not_have_fails_with_the_agent_error(agents, tmp_path):
    driver = agents.driver("--seed", "1", cwd=tmp_path)
    with pytest.raises(DriverError) as info:
        driver.read_session("no-such-session")
    assert info.value.code == "provider-error"


def test_every_session_set_up_passes_an_empty_mcp_server_list(agents):
    from lib.types import PromptInput

    driver = agents.driver("--seed", "1")
    driver.read_session("seed-000")
    driver.prompt("seed-000", PromptInput(text="hello"))
    driver.stop()
    agents.driver("--seed", "1", "--no-resume").prompt("seed-000", PromptInput(text="hi"))
    assert [(r["method"], r["mcpServers"]) for r in agents.requests()] == [
        ("session/load", []), ("session/resume", []), ("session/load", [])]


# -- learned controls ---------------------------------------------------------------------


def test_a_load_teaches_the_session_modes_and_options_published_as_the_source_capabilities(agents):
    driver = agents.driver("--seed", "1")
    assert driver.source.capabilities.modes == [] and driver.source.capabilities.config_options == {}
    driver.read_session("seed-000")
    caps = driver.source.capabilities
    assert caps.modes == ["ask", "code", "plan"]
    assert sorted(caps.config_options) == ["mode", "model", "profile", "verbose"]
    assert caps.config_options["verbose"] == {"type": "boolean", "id": "verbose", "name": "Verbose output",
                                              "currentValue": False}
    profile = caps.config_options["profile"]
    assert [g["group"] for g in profile["options"]] == ["remote", "local"]
    assert driver.source.to_wire()["capabilities"]["modes"] == ["ask", "code", "plan"]


def test_a_later_response_replaces_the_session_controls_and_set_config_option_replaces_options(agents):
    driver = agents.driver("--seed", "1")
    driver.read_session("seed-000")
    assert driver.controls.get("seed-000").options["model"]["currentValue"] == "fast"
    assert driver.set_config_option("seed-000", "model", "smart").status == "succeeded"
    assert driver.controls.get("seed-000").options["model"]["currentValue"] == "smart"
    assert driver.source.capabilities.config_options["model"]["currentValue"] == "smart"
    # a later load's answer replaces everything known of the session
    driver.controls.replace_options("seed-000", [])  # as if an answer had carried none
    assert driver.source.capabilities.config_options["model"]["currentValue"] == "smart"  # not published yet
    driver.read_session("seed-000")
    assert sorted(driver.controls.get("seed-000").options) == ["mode", "model", "profile", "verbose"]


def test_a_response_without_controls_removes_the_session_controls(agents):
    from acp.schema import LoadSessionResponse

    driver = agents.driver("--seed", "1")
    driver.read_session("seed-000")
    driver.controls.learn("seed-000", LoadSessionResponse())  # an answer naming no modes or options
    driver.publish_controls()
    assert driver.source.capabilities.modes == [] and driver.source.capabilities.config_options == {}


def test_a_completed_inventory_forgets_the_controls_of_sessions_it_no_longer_lists(agents):
    driver = agents.driver("--seed", "5", "--page-size", "2")
    driver.read_session("seed-000")
    driver.read_session("seed-001")
    assert driver.controls.known("seed-000") and driver.controls.known("seed-001")
    os.remove(agents.home / "sessions" / "seed-000.json")  # the agent no longer has it
    first = driver.list_sessions()
    assert driver.controls.known("seed-000")  # an unfinished inventory removes nothing
    driver.list_sessions(first.next_cursor)
    assert not driver.controls.known("seed-000") and driver.controls.known("seed-001")
    assert driver.source.capabilities.modes == ["ask", "code", "plan"]  # seed-001 still has them


def test_the_published_modes_are_the_sorted_union_of_every_session(agents):
    from acp.schema import LoadSessionResponse

    driver = agents.driver("--seed", "1")
    response = LoadSessionResponse.model_validate({
        "modes": {"currentModeId": "zeta", "availableModes": [{"id": "zeta", "name": "Z"}, {"id": "ask", "name": "A"}]},
        "configOptions": [{"type": "boolean", "id": "fast", "name": "Fast", "currentValue": True}],
    })
    driver.read_session("seed-000")
    driver.controls.learn("other", response)
    driver.publish_controls()
    assert driver.source.capabilities.modes == ["ask", "code", "plan", "zeta"]
    assert sorted(driver.source.capabilities.config_options) == ["fast", "mode", "model", "profile", "verbose"]


def test_stop_is_idempotent_and_a_stopped_driver_refuses_calls(agents):
    driver = agents.driver("--seed", "1")
    process = driver._connection.process.process
    driver.stop()
    driver.stop()
    assert process.returncode is not None
    with pytest.raises(DriverError) as info:
        driver.read_session("seed-000")
    assert info.value.code == "driver-stopped"
    assert sys.executable  # the agent ran on this interpreter


def test_the_load_that_readies_a_prompt_is_serialised_with_reads_of_the_session(agents):
    from lib.types import PromptInput

    driver = agents.driver("--seed", "1", "--no-resume", "--chunk-delay", "0")
    reads = [in_background(driver.read_session, "seed-000") for _ in range(2)]
    prompt = in_background(driver.prompt, "seed-000", PromptInput(text="hi"))
    for thread, _ in [*reads, prompt]:
        thread.join(60)
    assert prompt[1]["value"].status == "succeeded"
    log = agents.loads()
    # A read that starts while the prompt holds the session reads the prompt's updates
    # instead of loading, so 1 to 3 loads ran (the prompt's always); never two at once.
    assert len(log) >= 2 and log == ["begin seed-000", "end seed-000"] * (len(log) // 2)

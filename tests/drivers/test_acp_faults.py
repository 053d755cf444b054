"""ACP agents that fail: one that exits, floods stderr, answers garbage, or never answers.
The faults are injected into the project's test agent (flags of
tests/support/acp_test_agent.py), since a real agent cannot be made to show them on cue.

Each fault fails the call it hits with a stable code (the source degrades), never hangs
past a stop, and leaves other sources working. Nothing here measures time: the guards
only catch a hang.
"""

from __future__ import annotations

import logging

import pytest

from lib.drivers.base import Cancelled, CancelSignal, DriverError
from lib.types import CommandExecutionOptions, PromptInput
from tests.support.acp_drivers import agent_world, in_background, outcome_of

STILL_WAITING_SECONDS = 2  # how long a call that must not return is watched before the stop


@pytest.fixture
def agents(tmp_path):
    yield from agent_world(tmp_path)


def ended(driver) -> bool:
    process = driver._connection.process.process
    return process is not None and process.returncode is not None


# -- the agent exits ----------------------------------------------------------------------


def test_exit_fault_at_start_fails_start_with_the_exit_code_and_keeps_its_words_as_detail(agents):
    driver = agents.driver("--exit-on", "initialize", start=False)
    with pytest.raises(DriverError) as info:
        driver.start()
    assert info.value.code == "start-failed"
    assert "exited with code 3" in info.value.message and "agentctl -v" in info.value.message
    assert "exiting on initialize" not in info.value.message  # the agent's words: detail only
    assert "exiting on initialize" in info.value.detail
    assert ended(driver)


def test_exit_fault_mid_read_fails_that_read_and_every_later_call(agents):
    driver = agents.driver("--seed", "1", "--exit-on", "session/load")
    assert [s.native_session_id for s in driver.list_sessions().sessions] == ["seed-000"]
    with pytest.raises(DriverError) as info:
        driver.read_session("seed-000")
    assert info.value.code == "agent-exited" and "source acp" in info.value.message
    with pytest.raises(DriverError) as later:
        driver.list_sessions()
    assert later.value.code == "agent-exited"
    assert ended(driver)


def test_exit_fault_mid_prompt_leaves_the_prompt_unknown(agents):
    driver = agents.driver("--seed", "1", "--exit-on", "session/prompt")
    result = driver.prompt("seed-000", PromptInput(text="hi"))
    assert result.status == "unknown" and result.error.code == "transport-lost"
    assert "exited with code 3" in result.error.message


def test_exit_fault_before_the_prompt_is_sent_fails_it_as_not_run(agents):
    driver = agents.driver("--seed", "1", "--exit-on", "session/resume")
    result = driver.prompt("seed-000", PromptInput(text="hi"))
    assert result.status == "failed" and result.error.code == "agent-exited" and result.error.retryable


# -- the agent floods stderr ----------------------------------------------------------------


def test_stderr_flood_fault_never_blocks_the_agent_and_each_line_is_copied_with_the_acp_prefix(agents, caplog):
    caplog.set_level(logging.INFO, logger="agentctl.provider")
    # 4 MB on stderr before answering initialize: a pipe nobody drains holds 64 KiB
    outcome = outcome_of(agents.driver, "--seed", "2", "--stderr-flood", str(4_000_000))
    assert not outcome["hung"] and "error" not in outcome, outcome
    driver = outcome["value"]
    assert len(driver.list_sessions().sessions) == 2
    driver.stop()  # the stop reads stderr to its end
    copied = [r.getMessage() for r in caplog.records if r.name == "agentctl.provider"]
    written = 4_000_000 // 1023 + 1  # the agent's lines are 1023 bytes with their newline
    flood = [line for line in copied if "flooding stderr" in line]
    assert len(flood) == written
    assert all(line.startswith("acp (source acp): acp-test-agent: flooding stderr") for line in flood)


# -- the agent answers garbage ---------------------------------------------------------------


def test_garbage_fault_fails_the_call_with_provider_protocol_error_and_ends_the_agent(agents):
    driver = agents.driver("--seed", "1", "--garbage-on", "session/list")
    outcome = outcome_of(driver.list_sessions)
    assert not outcome["hung"]
    error = outcome["error"]
    assert isinstance(error, DriverError) and error.code == "provider-protocol-error"
    assert "no JSON" in error.message and "this is no JSON-RPC message" in error.detail
    assert "this is no JSON-RPC message" not in error.message
    assert ended(driver)


def test_garbage_fault_during_a_read_fails_the_read(agents):
    driver = agents.driver("--seed", "1", "--garbage-on", "session/load")
    with pytest.raises(DriverError) as info:
        driver.read_session("seed-000")
    assert info.value.code == "provider-protocol-error"


# -- the agent never answers ----------------------------------------------------------------


def test_never_answers_fault_a_read_waits_with_no_time_limit_until_stop_ends_it(agents):
    driver = agents.driver("--seed", "1", "--hang-on", "session/load")
    thread, outcome = in_background(driver.read_session, "seed-000")
    thread.join(STILL_WAITING_SECONDS)
    assert thread.is_alive(), "a call the agent never answers must wait (no elapsed-time limit)"
    driver.stop()
    thread.join(60)
    assert not thread.is_alive()
    assert isinstance(outcome["error"], DriverError) and outcome["error"].code == "driver-stopped"
    assert ended(driver)


def test_never_answers_fault_a_prompt_waits_until_stop_and_is_then_unknown(agents):
    driver = agents.driver("--seed", "1", "--hang-on", "session/prompt")
    started = []
    thread, outcome = in_background(
        driver.prompt, "seed-000", PromptInput(text="hi"),
        CommandExecutionOptions(on_session_active=lambda: started.append(True)))
    thread.join(STILL_WAITING_SECONDS)
    assert thread.is_alive() and started == [True]
    assert driver.cancel("seed-000").status == "succeeded"  # sent; the agent still never answers
    driver.stop()
    thread.join(60)
    result = outcome["value"]
    assert result.status == "unknown" and result.error.code == "transport-lost"


def test_never_answers_fault_start_ends_when_its_signal_is_set(agents):
    driver = agents.driver("--hang-on", "initialize", start=False)
    signal = CancelSignal()
    thread, outcome = in_background(driver.start, signal)
    thread.join(STILL_WAITING_SECONDS)
    assert thread.is_alive()
    signal.cancel()
    thread.join(60)
    assert isinstance(outcome["error"], Cancelled)
    assert ended(driver)  # start-up failed: the agent was stopped


# -- other sources go on ---------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["--exit-on", "--garbage-on"])
def test_a_fault_in_one_source_leaves_another_source_working(agents, fault):
    broken = agents.driver("--seed", "1", fault, "session/load", source_id="broken")
    healthy = agents.driver("--seed", "1", source_id="healthy")
    with pytest.raises(DriverError):
        broken.read_session("seed-000")
    assert len(healthy.read_session("seed-000").events) == 7
    assert healthy.prompt("seed-000", PromptInput(text="still here")).status == "succeeded"

"""The ACP driver's commands over the project's test agent: prompt (resume or load first,
milestones once the prompt has started), cancel, set mode, set configuration option,
permission requests, rename, and start through session/new."""

from __future__ import annotations

import pytest

from lib.types import CommandExecutionOptions, PromptInput, StartInput
from tests.support.acp_drivers import agent_world, in_background


@pytest.fixture
def agents(tmp_path):
    yield from agent_world(tmp_path)


def methods(agents) -> list[str]:
    return [r["method"] for r in agents.requests()]


# -- prompt -----------------------------------------------------------------------------


def test_a_prompt_resumes_when_the_agent_advertises_resume_and_succeeds_at_end_turn(agents):
    driver = agents.driver("--seed", "1", "--chunk-delay", "0")
    result = driver.prompt("seed-000", PromptInput(text="hello there"))
    assert result.status == "succeeded", result
    assert result.result["stopReason"] == "end_turn" and result.result["updates"] > 0
    assert methods(agents) == ["session/resume"]
    # the agent really ran it: a new process loads the prompt into the history
    history = agents.driver("--seed", "1").read_session("seed-000").events
    assert {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hello there"}} in history


def test_a_prompt_loads_first_when_the_agent_has_no_resume(agents):
    driver = agents.driver("--seed", "1", "--no-resume", "--chunk-delay", "0")
    assert not driver.resume_supported
    assert driver.prompt("seed-000", PromptInput(text="hi")).status == "succeeded"
    assert methods(agents) == ["session/load"]
    assert driver.source.capabilities.modes == ["ask", "code", "plan"]  # learned by that load


def test_the_milestones_come_once_the_prompt_has_started_and_cancel_can_address_it(agents):
    driver = agents.driver("--seed", "1")
    seen: list[str] = []

    def ready() -> None:
        seen.append("ready")
        # the prompt is sent: the agent has it, and cancel reaches it
        assert "session/resume" in methods(agents)

    def active() -> None:
        seen.append("active")
        snapshot = driver.read_session("seed-000")  # the worker's refresh: activity observable
        seen.append(f"active={snapshot.summary.active} complete={snapshot.complete}")
        seen.append(f"cancel={driver.cancel('seed-000').status}")

    result = driver.prompt("seed-000", PromptInput(text="slow please"),
                           CommandExecutionOptions(on_cancellation_ready=ready, on_session_active=active))
    assert seen == ["ready", "active", "active=True complete=False", "cancel=succeeded"]
    # the read during the turn was made from the turn's own updates: no session/load mid-turn
    assert methods(agents) == ["session/resume"]
    assert result.status == "failed" and result.error.code == "stop-cancelled"
    assert result.result["stopReason"] == "cancelled"
    assert driver.read_session("seed-000").summary.active is None  # over: no longer reported


def test_cancel_without_a_prompt_of_this_driver_running_fails_and_sends_nothing(agents):
    driver = agents.driver("--seed", "1")
    result = driver.cancel("seed-000")
    assert result.status == "failed" and result.error.code == "no-active-prompt"


def test_a_second_prompt_on_a_session_with_one_running_needs_confirmation(agents):
    driver = agents.driver("--seed", "1")
    seen = []

    def active() -> None:
        seen.append(driver.prompt("seed-000", PromptInput(text="again")))
        driver.cancel("seed-000")

    driver.prompt("seed-000", PromptInput(text="slow"), CommandExecutionOptions(on_session_active=active))
    assert seen[0].status == "needs-confirmation" and seen[0].error.code == "prompt-in-progress"


def test_permission_requests_are_answered_cancelled(agents):
    driver = agents.driver("--seed", "1", "--chunk-delay", "0")
    result = driver.prompt("seed-000", PromptInput(text="ask permission to write"))
    # the test agent ends the turn `cancelled` exactly when the answer was the cancelled outcome
    assert result.status == "failed" and result.result["stopReason"] == "cancelled"
    history = agents.driver("--seed", "1").read_session("seed-000").events
    failed = [e for e in history if e["sessionUpdate"] == "tool_call_update"]
    assert failed and failed[-1]["status"] == "failed"


def test_prompt_on_a_session_the_agent_does_not_have_fails_without_running(agents, tmp_path):
    driver = agents.driver("--seed", "1", cwd=tmp_path)
    result = driver.prompt("no-such-session", PromptInput(text="hi"))
    assert result.status == "failed" and result.error.code == "provider-error"


def test_rename_is_unsupported(agents):
    result = agents.driver("--seed", "1").rename_session("seed-000", "New title")
    assert result.status == "unsupported" and result.error.code == "unsupported"


# -- modes and options ------------------------------------------------------------------


def test_set_mode_is_checked_against_the_session_modes(agents):
    driver = agents.driver("--seed", "1")
    unknown = driver.set_mode("seed-000", "yolo")  # the session is made ready first, to learn
    assert unknown.status == "unsupported" and unknown.error.code == "unknown-mode"
    assert "ask, code, plan" in unknown.error.message
    done = driver.set_mode("seed-000", "code")
    assert done.status == "succeeded" and done.result["mode"] == "code"
    assert driver.controls.get("seed-000").current_mode == "code"


def test_set_config_option_takes_only_advertised_values_including_nested_groups(agents):
    driver = agents.driver("--seed", "1")
    assert driver.set_config_option("seed-000", "model", "smart").status == "succeeded"
    assert driver.set_config_option("seed-000", "profile", "llama").status == "succeeded"  # in a group
    refused = driver.set_config_option("seed-000", "profile", "gpt-z")
    assert refused.status == "failed" and refused.error.code == "invalid-option-value"
    assert "gpt-a, gpt-b, llama" in refused.error.message
    not_a_string = driver.set_config_option("seed-000", "model", 3)
    assert not_a_string.status == "failed" and not_a_string.error.code == "invalid-option-value"
    unknown = driver.set_config_option("seed-000", "temperature", "hot")
    assert unknown.status == "unsupported" and unknown.error.code == "unknown-option"
    # the agent really took the nested value: a new process reads it back
    fresh = agents.driver("--seed", "1")
    fresh.read_session("seed-000")
    assert fresh.controls.get("seed-000").options["profile"]["currentValue"] == "llama"


def test_boolean_options_take_booleans_only(agents):
    driver = agents.driver("--seed", "1")
    refused = driver.set_config_option("seed-000", "verbose", "true")
    assert refused.status == "failed" and refused.error.code == "invalid-option-value"
    done = driver.set_config_option("seed-000", "verbose", True)
    assert done.status == "succeeded"
    assert driver.controls.get("seed-000").options["verbose"]["currentValue"] is True


# -- start ------------------------------------------------------------------------------


def test_start_makes_a_session_through_session_new_and_maps_the_caller_id(agents, tmp_path):
    workdir = tmp_path / "work"
    workdir.mkdir()
    driver = agents.driver("--chunk-delay", "0", cwd=workdir)
    milestones: list[str] = []
    result = driver.start_session("caller-chosen-1", StartInput(text="first words", mode="plan"),
                                  CommandExecutionOptions(on_cancellation_ready=lambda: milestones.append("ready"),
                                                          on_session_active=lambda: milestones.append("active")))
    assert result.status == "succeeded", result
    agent_id = result.result["agentSessionId"]
    assert agent_id != "caller-chosen-1" and agent_id.startswith("sess-")
    assert milestones == ["ready", "active"]
    assert methods(agents) == ["session/new"]
    # the caller's id addresses the agent's session; the summary says which start made it
    snapshot = driver.read_session("caller-chosen-1")
    assert snapshot.summary.native_session_id == agent_id
    assert snapshot.summary.started_as == "caller-chosen-1"
    assert snapshot.summary.cwd == str(workdir)
    listed = {s.native_session_id: s for s in driver.list_sessions().sessions}
    assert listed[agent_id].started_as == "caller-chosen-1"
    assert driver.controls.get(agent_id).current_mode == "plan"
    assert driver.prompt("caller-chosen-1", PromptInput(text="more")).status == "succeeded"
    again = driver.start_session("caller-chosen-1", StartInput(text="again"))
    assert again.status == "failed" and again.error.code == "session-exists"


def test_start_needs_a_directory_and_refuses_a_mode_the_new_session_lacks(agents, tmp_path):
    driver = agents.driver("--chunk-delay", "0")
    no_cwd = driver.start_session("c-1", StartInput(text="hi"))
    assert no_cwd.status == "failed" and no_cwd.error.code == "cwd-required"
    bad_mode = driver.start_session("c-2", StartInput(text="hi", cwd=str(tmp_path), mode="yolo"))
    assert bad_mode.status == "unsupported" and bad_mode.error.code == "unknown-mode"


def test_two_prompts_on_different_sessions_run_together(agents):
    driver = agents.driver("--seed", "2")
    results: dict[str, object] = {}

    def second_prompt() -> None:
        # runs while the first prompt is active: the second completes inside it
        results["second"] = driver.prompt("seed-001", PromptInput(text="quick"))
        driver.cancel("seed-000")

    thread, outcome = in_background(driver.prompt, "seed-000", PromptInput(text="slow"),
                                    CommandExecutionOptions(on_session_active=second_prompt))
    thread.join(60)
    assert results["second"].status == "succeeded"
    assert outcome["value"].result["stopReason"] == "cancelled"

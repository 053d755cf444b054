"""Claude prompts, starts, cancel, rename, modes and model end to end: the real pinned
Claude Agent SDK and its bundled Claude Code CLI, offline against the fake Messages API
on 127.0.0.1, over fixture sessions in a temporary configuration directory."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from lib.drivers.claude_agent_sdk import ClaudeAgentSdkDriver
from lib.drivers.claude_sdk_adapter import ClaudeSdkAdapter
from lib.types import CommandExecutionOptions, PromptInput, StartInput
from tests.support.claude_home import (
    FixtureSession,
    FixtureTurn,
    make_config_dir,
    session_id,
)
from tests.support.claude_prompts import WHEN, PromptWorld, claude_children, option, prompt_world
from tests.support.fake_anthropic_server import REPLY_PREFIX

GUARD_SECONDS = 120  # a guard against a hang, never the measure of a test


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> Iterator[PromptWorld]:
    with prompt_world(tmp_path_factory.mktemp("claude-prompts")) as world:
        yield world


@pytest.fixture(scope="module")
def driver(setup) -> Iterator[ClaudeAgentSdkDriver]:
    driver = ClaudeAgentSdkDriver(setup.config())
    driver.start()
    try:
        yield driver
    finally:
        driver.stop()


@pytest.fixture(autouse=True)
def fresh_holds(setup):
    setup.server.reset()
    yield
    setup.server.release_holds()


def in_thread(call) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def body() -> None:
        outcome["result"] = call()

    worker = threading.Thread(target=body, daemon=True)
    worker.start()
    return worker, outcome


def wait_until(condition) -> None:
    deadline = time.monotonic() + GUARD_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition never became true")
        time.sleep(0.05)


def texts(driver, session: str) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in driver.read_session(session).normalized_messages]


# -- prompts ------------------------------------------------------------------------


def test_a_prompt_resumes_the_session_and_the_final_result_decides_success(driver, setup):
    session = setup.session("resume")
    milestones = []
    result = driver.prompt(session, PromptInput(text="Say hello"), CommandExecutionOptions(
        on_cancellation_ready=lambda: milestones.append("cancellation-ready"),
        on_session_active=lambda: milestones.append("session-active"),
    ))
    assert result.status == "succeeded", result
    assert milestones == ["cancellation-ready", "session-active"]
    assert result.result["sessionId"] == session and result.result["terminalReason"] == "completed"
    assert result.provider_operation_id
    assert texts(driver, session) == [
        ("user", "Earlier question of resume"), ("assistant", "Earlier answer."),
        ("user", "Say hello"), ("assistant", REPLY_PREFIX + "Say hello")]
    # The resume sent the earlier turn to the model with the new prompt.
    assert "Earlier question of resume" in str(setup.server.bodies[-1]["messages"])


def test_the_session_reads_active_while_the_session_active_refresh_runs(driver, setup):
    session = setup.session("active")
    seen = {}

    def refresh() -> None:
        seen["read"] = driver.read_session(session).summary.active
        seen["list"] = next(s.active for s in driver.list_sessions().sessions if s.native_session_id == session)

    result = driver.prompt(session, PromptInput(text="Quick one"), CommandExecutionOptions(on_session_active=refresh))
    assert result.status == "succeeded"
    assert seen == {"read": True, "list": True}
    assert driver.read_session(session).summary.active is None


def test_a_prompt_runs_in_the_directory_the_session_records_not_the_sources_cwd(setup):
    elsewhere = setup.session("elsewhere", cwd=setup.other)
    driver = ClaudeAgentSdkDriver(setup.config(cwd=None))
    driver.start()
    try:
        seen = {}
        result = driver.prompt(elsewhere, PromptInput(text="Where am I"), CommandExecutionOptions(
            on_session_active=lambda: seen.update(cwd=[option(c.argv, "--resume") for c in claude_children()])))
        assert result.status == "succeeded", result
        assert seen["cwd"] == [elsewhere]
        assert driver.read_session(elsewhere).summary.cwd == str(setup.other)
        assert texts(driver, elsewhere)[-1] == ("assistant", REPLY_PREFIX + "Where am I")
    finally:
        driver.stop()


def test_a_prompt_for_an_unknown_session_fails_without_starting_claude(driver, setup):
    before = len(setup.server.prompts)
    result = driver.prompt(str(uuid.uuid4()), PromptInput(text="Anyone there"))
    assert (result.status, result.error.code) == ("failed", "session-not-found")
    assert len(setup.server.prompts) == before


def test_cancel_before_the_lookup_marks_the_prompt_and_claude_never_starts(driver, setup):
    session = setup.session("cancel-early")
    before = len(setup.server.prompts)
    cancels = []
    result = driver.prompt(session, PromptInput(text="Never sent"), CommandExecutionOptions(
        on_cancellation_ready=lambda: cancels.append(driver.cancel(session))))
    assert [c.status for c in cancels] == ["succeeded"]
    assert (result.status, result.error.code) == ("failed", "cancelled")
    assert len(setup.server.prompts) == before
    assert ("user", "Never sent") not in texts(driver, session)


class HeldLookupAdapter(ClaudeSdkAdapter):
    """The real adapter, whose session lookup waits until the test lets it go on."""

    def __init__(self, config_dir: str) -> None:
        super().__init__(config_dir)
        self.lookup_started, self.go_on = threading.Event(), threading.Event()

    def get_session_info(self, session_id, directory):
        self.lookup_started.set()
        self.go_on.wait(GUARD_SECONDS)
        return super().get_session_info(session_id, directory)


def test_cancel_during_a_held_lookup_marks_the_prompt_and_claude_never_starts(setup):
    session = setup.session("cancel-lookup")
    adapter = HeldLookupAdapter(str(setup.config_dir))
    driver = ClaudeAgentSdkDriver(setup.config(), adapter=adapter)
    driver.start()
    try:
        before = len(setup.server.prompts)
        worker, outcome = in_thread(lambda: driver.prompt(session, PromptInput(text="Never sent either")))
        assert adapter.lookup_started.wait(GUARD_SECONDS)
        assert driver.cancel(session).status == "succeeded"
        adapter.go_on.set()
        worker.join(GUARD_SECONDS)
        assert (outcome["result"].status, outcome["result"].error.code) == ("failed", "cancelled")
        assert len(setup.server.prompts) == before
    finally:
        driver.stop()


def test_cancel_interrupts_a_prompt_the_fake_model_holds_open(driver, setup):
    session = setup.session("hold")
    worker, outcome = in_thread(lambda: driver.prompt(session, PromptInput(text="HOLD this turn")))
    assert setup.server.hold_started.wait(GUARD_SECONDS)
    cancelled = driver.cancel(session)
    assert cancelled.status == "succeeded" and cancelled.result == {"interrupted": True}
    worker.join(GUARD_SECONDS)
    result = outcome["result"]
    assert (result.status, result.error.code) == ("failed", "prompt-interrupted")
    # The session goes on: the next prompt succeeds.
    assert driver.prompt(session, PromptInput(text="After the cancel")).status == "succeeded"


def test_cancel_with_no_prompt_of_this_driver_fails(driver, setup):
    result = driver.cancel(setup.session("idle"))
    assert (result.status, result.error.code) == ("failed", "no-active-prompt")


def test_a_second_prompt_on_a_running_session_needs_confirmation(driver, setup):
    session = setup.session("twice")
    worker, outcome = in_thread(lambda: driver.prompt(session, PromptInput(text="HOLD the first")))
    assert setup.server.hold_started.wait(GUARD_SECONDS)
    second = driver.prompt(session, PromptInput(text="The second"))
    assert (second.status, second.error.code) == ("needs-confirmation", "prompt-in-progress")
    setup.server.release_holds()
    worker.join(GUARD_SECONDS)
    assert outcome["result"].status == "succeeded"


def test_prompts_of_two_sources_run_at_once_each_with_its_own_config_dir(setup, tmp_path):
    first = setup.session("concurrent-a")
    second_dir = make_config_dir(tmp_path / "second-config", [
        FixtureSession(id=session_id("concurrent-b"), cwd=str(setup.work), turns=(FixtureTurn("B?", "B."),),
                       created_at=WHEN, updated_at=WHEN, branch=None)])
    one = ClaudeAgentSdkDriver(setup.config())
    two = ClaudeAgentSdkDriver(setup.config(id="claude-two", config_dir=str(second_dir)))
    one.start()
    two.start()
    try:
        work_a, out_a = in_thread(lambda: one.prompt(first, PromptInput(text="HOLD source one")))
        work_b, out_b = in_thread(lambda: two.prompt(session_id("concurrent-b"), PromptInput(text="HOLD source two")))
        wait_until(lambda: {"HOLD source one", "HOLD source two"} <= set(setup.server.prompts))
        # Both conversations are held open at once, each CLI with its own configuration directory.
        dirs = sorted(child.environ["CLAUDE_CONFIG_DIR"] for child in claude_children())
        assert dirs == sorted([str(setup.config_dir), str(second_dir)])
        assert "CLAUDE_CONFIG_DIR" not in os.environ or os.environ["CLAUDE_CONFIG_DIR"] not in dirs
        setup.server.release_holds()
        work_a.join(GUARD_SECONDS)
        work_b.join(GUARD_SECONDS)
        assert out_a["result"].status == out_b["result"].status == "succeeded"
    finally:
        one.stop()
        two.stop()


# -- starts -------------------------------------------------------------------------


def test_a_headless_start_uses_the_chosen_id_the_sources_cwd_and_the_title(driver, setup):
    new = str(uuid.uuid4())
    milestones = []
    result = driver.start_session(new, StartInput(text="Begin the work", title="Chosen title"),
                                  CommandExecutionOptions(
                                      on_cancellation_ready=lambda: milestones.append("cancellation-ready"),
                                      on_session_active=lambda: milestones.append(
                                          driver.read_session(new).summary.active)))
    assert result.status == "succeeded", result
    assert milestones == ["cancellation-ready", True]
    assert result.result["nativeSessionId"] == new and result.result["cwd"] == str(setup.work)
    summary = driver.read_session(new).summary
    assert (summary.title, summary.cwd) == ("Chosen title", str(setup.work))
    assert texts(driver, new) == [("user", "Begin the work"), ("assistant", REPLY_PREFIX + "Begin the work")]
    # The start recorded the directory: the next prompt resumes there without a lookup.
    assert driver.prompt(new, PromptInput(text="And then")).status == "succeeded"


def test_a_start_in_another_directory_than_the_sources_cwd_fails(driver, setup):
    before = len(setup.server.prompts)
    result = driver.start_session(str(uuid.uuid4()), StartInput(text="Elsewhere", cwd=str(setup.other)))
    assert (result.status, result.error.code) == ("failed", "wrong-directory")
    assert len(setup.server.prompts) == before


def test_a_start_without_a_source_cwd_needs_a_directory_and_makes_it_absolute(setup, monkeypatch):
    driver = ClaudeAgentSdkDriver(setup.config(cwd=None))
    driver.start()
    try:
        missing = driver.start_session(str(uuid.uuid4()), StartInput(text="Where"))
        assert (missing.status, missing.error.code) == ("failed", "cwd-required")
        monkeypatch.chdir(setup.root)
        new = str(uuid.uuid4())
        result = driver.start_session(new, StartInput(text="Relative start", cwd="other"))
        assert result.status == "succeeded", result
        assert result.result["cwd"] == str(setup.other)
        assert driver.read_session(new).summary.cwd == str(setup.other)
    finally:
        driver.stop()


def test_a_start_for_a_session_that_exists_fails_without_starting_claude(driver, setup):
    existing = setup.session("exists")
    before = len(setup.server.prompts)
    result = driver.start_session(existing, StartInput(text="Again"))
    assert (result.status, result.error.code) == ("failed", "session-exists")
    assert len(setup.server.prompts) == before


def test_a_start_id_that_is_not_a_uuid_fails(driver):
    result = driver.start_session("not-a-uuid", StartInput(text="Hi"))
    assert (result.status, result.error.code) == ("failed", "invalid-session-id")


def test_a_start_mode_applies_to_the_first_turn_and_is_kept_for_later_prompts(driver, setup):
    new = str(uuid.uuid4())
    modes = []

    def seen() -> None:
        modes.extend(option(c.argv, "--permission-mode") for c in claude_children())

    options = CommandExecutionOptions(on_session_active=seen)
    assert driver.start_session(new, StartInput(text="Plan it", mode="plan"), options).status == "succeeded"
    assert driver.prompt(new, PromptInput(text="Still planning"), options).status == "succeeded"
    assert modes == ["plan", "plan"]


def test_a_start_with_a_mode_the_driver_does_not_advertise_is_unsupported(driver, setup):
    result = driver.start_session(str(uuid.uuid4()), StartInput(text="Skip checks", mode="bypassPermissions"))
    assert (result.status, result.error.code) == ("unsupported", "unsupported-mode")


def test_a_failed_start_keeps_no_mode(driver, setup):
    new = str(uuid.uuid4())
    failed = driver.start_session(new, StartInput(text="FAIL500 at once", mode="plan"))
    assert failed.status == "failed"
    modes = []
    result = driver.prompt(new, PromptInput(text="Try again"), CommandExecutionOptions(
        on_session_active=lambda: modes.extend(option(c.argv, "--permission-mode") for c in claude_children())))
    assert result.status == "succeeded", result
    assert modes == [None]


# -- rename, modes, model -------------------------------------------------------------


def test_rename_goes_through_the_sdk_and_the_next_read_shows_it(driver, setup):
    session = setup.session("rename")
    result = driver.rename_session(session, "A better name")
    assert result.status == "succeeded"
    assert driver.read_session(session).summary.title == "A better name"
    missing = driver.rename_session(str(uuid.uuid4()), "Nobody")
    assert (missing.status, missing.error.code) == ("failed", "session-not-found")


def test_set_mode_is_kept_per_session_and_applied_to_the_next_prompt(driver, setup):
    session, other = setup.session("mode"), setup.session("mode-other")
    assert driver.set_mode(session, "acceptEdits").status == "succeeded"
    modes = {}
    for name in (session, other):
        driver.prompt(name, PromptInput(text="Edit"), CommandExecutionOptions(
            on_session_active=lambda name=name: modes.update(
                {name: [option(c.argv, "--permission-mode") for c in claude_children()]})))
    assert modes == {session: ["acceptEdits"], other: [None]}
    unknown = driver.set_mode(session, "yolo")
    assert (unknown.status, unknown.error.code) == ("unsupported", "unsupported-mode")


def test_bypass_permissions_needs_allow_danger_full_access_and_works_as_root(setup, monkeypatch):
    monkeypatch.delenv("IS_SANDBOX", raising=False)  # the child must get it from the driver
    session = setup.session("bypass")
    plain = ClaudeAgentSdkDriver(setup.config())
    assert plain.set_mode(session, "bypassPermissions").status == "unsupported"
    driver = ClaudeAgentSdkDriver(setup.config(allow_danger_full_access=True))
    driver.start()
    try:
        assert driver.set_mode(session, "bypassPermissions").status == "succeeded"
        seen = {}
        result = driver.prompt(session, PromptInput(text="No questions asked"), CommandExecutionOptions(
            on_session_active=lambda: seen.update(children=claude_children())))
        # As root the CLI refuses bypassPermissions unless IS_SANDBOX=1 is in its environment.
        assert result.status == "succeeded", result
        [child] = seen["children"]
        assert option(child.argv, "--permission-mode") == "bypassPermissions"
        if os.geteuid() == 0:
            assert child.environ["IS_SANDBOX"] == "1"
        assert "IS_SANDBOX" not in os.environ  # given to the child only
    finally:
        driver.stop()


def test_the_model_option_is_kept_per_session_and_sent_to_the_model_api(driver, setup):
    session = setup.session("model")
    assert driver.set_config_option(session, "model", "claude-sonnet-5-5").status == "succeeded"
    assert driver.prompt(session, PromptInput(text="Which model")).status == "succeeded"
    assert setup.server.bodies[-1]["model"] == "claude-sonnet-5-5"
    unknown = driver.set_config_option(session, "temperature", 1)
    assert (unknown.status, unknown.error.code) == ("unsupported", "unsupported-option")
    bad = driver.set_config_option(session, "model", 5)
    assert (bad.status, bad.error.code) == ("failed", "invalid-value")


# -- stop -----------------------------------------------------------------------------


def test_stop_ends_a_running_prompt_and_a_prompt_after_stop_never_reaches_the_sdk(setup):
    session = setup.session("stop")
    driver = ClaudeAgentSdkDriver(setup.config())
    driver.start()
    worker, outcome = in_thread(lambda: driver.prompt(session, PromptInput(text="HOLD until stopped")))
    assert setup.server.hold_started.wait(GUARD_SECONDS)
    driver.stop()
    worker.join(GUARD_SECONDS)
    assert not worker.is_alive()
    assert outcome["result"].status in ("failed", "unknown")
    assert claude_children() == []
    before = len(setup.server.prompts)
    after = driver.prompt(session, PromptInput(text="Too late"))
    assert (after.status, after.error.code) == ("failed", "driver-stopped")
    assert len(setup.server.prompts) == before


def test_stop_during_the_lookup_fails_the_pending_prompt_without_starting_claude(setup):
    session = setup.session("stop-early")
    driver = ClaudeAgentSdkDriver(setup.config())
    driver.start()
    before = len(setup.server.prompts)
    result = driver.prompt(session, PromptInput(text="Never sent"),
                           CommandExecutionOptions(on_cancellation_ready=driver.stop))
    assert (result.status, result.error.code) == ("failed", "driver-stopped")
    assert len(setup.server.prompts) == before

"""The Claude driver's faults, each test named after the fault: the Claude Code CLI
missing or crashing, a session file the SDK cannot read, the model API answering errors
or hanging. Each shows what fails (one prompt, one read), that the rest goes on, that
the result says `failed` or `unknown` truthfully, and that nothing outlives a cancel or
a stop. Real parts throughout (the pinned SDK, its bundled CLI, the fake Messages API on
127.0.0.1), except the crashing CLI of the `_fake_failure` test."""

from __future__ import annotations

import logging
import os
import signal
import threading
import uuid
from collections.abc import Iterator

import pytest

from lib.drivers.base import DriverError
from lib.types import PromptInput, StartInput
from tests.support.claude_prompts import PromptWorld, claude_children, prompt_world

GUARD_SECONDS = 120  # a guard against a hang, never the measure of a test


@pytest.fixture(scope="module")
def faults(tmp_path_factory) -> Iterator[PromptWorld]:
    with prompt_world(tmp_path_factory.mktemp("claude-faults")) as world:
        yield world


@pytest.fixture(autouse=True)
def fresh_holds(faults):
    faults.server.reset()
    yield
    faults.server.release_holds()


def in_thread(call) -> tuple[threading.Thread, dict]:
    outcome: dict = {}
    worker = threading.Thread(target=lambda: outcome.update(result=call()), daemon=True)
    worker.start()
    return worker, outcome


def test_a_missing_cli_fails_prompts_as_cli_not_found_while_reads_go_on(faults):
    session = faults.session("missing-cli")
    driver = faults.driver(command=[str(faults.root / "no-such-claude")])
    try:
        result = driver.prompt(session, PromptInput(text="Hello"))
        assert (result.status, result.error.code) == ("failed", "cli-not-found")
        start = driver.start_session(str(uuid.uuid4()), StartInput(text="Hello"))
        assert (start.status, start.error.code) == ("failed", "cli-not-found")
        # The source degrades to what needs no CLI: inventory and reads.
        assert session in {s.native_session_id for s in driver.list_sessions().sessions}
        assert driver.read_session(session).summary.native_session_id == session
        # Another source, with the bundled CLI, goes on prompting.
        other = faults.driver(id="claude-bundled")
        try:
            assert other.prompt(session, PromptInput(text="From the other source")).status == "succeeded"
        finally:
            other.stop()
    finally:
        driver.stop()


def test_a_cli_that_crashes_at_start_fails_the_prompt_and_its_words_stay_out_fake_failure(faults, caplog):
    crashing = faults.root / "crashing-claude"
    crashing.write_text("#!/bin/sh\necho 'fatal: secret-token-xyz cannot start' >&2\nexit 3\n")
    crashing.chmod(0o700)
    session = faults.session("crashing-cli")
    driver = faults.driver(command=[str(crashing)])
    try:
        with caplog.at_level(logging.INFO, logger="agentctl.provider"):
            result = driver.prompt(session, PromptInput(text="Hello"))
        assert (result.status, result.error.code) == ("failed", "cli-failed")
        assert "secret-token-xyz" not in result.error.message
        assert "secret-token-xyz" in caplog.text  # offered to `agentctl -v` only
        assert driver.read_session(session).summary.native_session_id == session
    finally:
        driver.stop()
    # The real CLI still runs prompts for the same session afterwards.
    healthy = faults.driver()
    try:
        assert healthy.prompt(session, PromptInput(text="Again")).status == "succeeded"
    finally:
        healthy.stop()


def test_the_cli_killed_mid_turn_gives_unknown_and_other_sessions_go_on(faults):
    session, other = faults.session("killed"), faults.session("killed-other")
    driver = faults.driver()
    try:
        worker, outcome = in_thread(lambda: driver.prompt(session, PromptInput(text="HOLD while killed")))
        assert faults.server.hold_started.wait(GUARD_SECONDS)
        [child] = claude_children()
        os.kill(child.pid, signal.SIGKILL)
        worker.join(GUARD_SECONDS)
        result = outcome["result"]
        assert (result.status, result.error.code) == ("unknown", "cli-exited")
        faults.server.release_holds()
        assert driver.prompt(other, PromptInput(text="Next one")).status == "succeeded"
    finally:
        driver.stop()


def test_a_session_file_the_sdk_cannot_read_fails_its_read_only_and_the_cli_decides_its_prompt(faults):
    broken = faults.session("unreadable", poison=b"\xff\xfe")
    fine = faults.session("readable")
    driver = faults.driver()
    try:
        with pytest.raises(DriverError) as failure:
            driver.read_session(broken)
        assert failure.value.code == "provider-error"
        # The SDK's info lookup reads heads and tails leniently, and so does the CLI, which
        # resumes the session: the prompt's result is the CLI's own, here a success.
        result = driver.prompt(broken, PromptInput(text="Can you read it"))
        assert result.status == "succeeded", result
        assert "Can you read it" in faults.server.prompts
        with pytest.raises(DriverError):
            driver.read_session(broken)
        assert driver.read_session(fine).summary.native_session_id == fine
        assert driver.prompt(fine, PromptInput(text="And this one")).status == "succeeded"
    finally:
        driver.stop()


def test_the_model_api_answering_errors_fails_the_prompt_as_api_error(faults):
    session, other = faults.session("api-500"), faults.session("api-500-other")
    driver = faults.driver()
    try:
        result = driver.prompt(session, PromptInput(text="FAIL500 please"))
        assert (result.status, result.error.code) == ("failed", "api-error")
        assert result.result["apiErrorStatus"] == 500
        assert driver.prompt(other, PromptInput(text="Fine now")).status == "succeeded"
    finally:
        driver.stop()


def test_the_model_api_hanging_is_ended_by_a_cancel(faults):
    session = faults.session("hang-cancel")
    driver = faults.driver()
    try:
        worker, outcome = in_thread(lambda: driver.prompt(session, PromptInput(text="HANG forever")))
        assert faults.server.hang_started.wait(GUARD_SECONDS)
        assert driver.cancel(session).status == "succeeded"
        worker.join(GUARD_SECONDS)
        assert not worker.is_alive()
        result = outcome["result"]
        assert (result.status, result.error.code) == ("failed", "prompt-interrupted")
    finally:
        driver.stop()


def test_the_model_api_hanging_is_ended_by_a_stop(faults):
    session = faults.session("hang-stop")
    driver = faults.driver()
    worker, outcome = in_thread(lambda: driver.prompt(session, PromptInput(text="HANG until stop")))
    assert faults.server.hang_started.wait(GUARD_SECONDS)
    driver.stop()
    worker.join(GUARD_SECONDS)
    assert not worker.is_alive()
    assert outcome["result"].status in ("failed", "unknown")
    assert claude_children() == []

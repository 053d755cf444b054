"""Prompts, cancellation and approvals end to end: the real pinned `codex app-server`
running real turns offline against the fake Responses API on 127.0.0.1.
"""

from __future__ import annotations

import dataclasses
import os
import signal as signals
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.types import AgentSourceConfig, CommandExecutionOptions, PromptInput
from tests.support.codex_home import (
    FixtureThread,
    FixtureTurn,
    make_codex_home,
    uuid7_like,
    write_fake_model_config,
)
from tests.support.fake_codex_child import child_argv
from tests.support.fake_responses_server import FakeResponsesServer

WHEN = datetime(2026, 4, 1, 12, 0, tzinfo=UTC)


def thread(seed: int, workdir: Path) -> FixtureThread:
    return FixtureThread(
        id=uuid7_like(seed, WHEN),
        created_at=WHEN,
        cwd=str(workdir),
        model_provider="fake",  # a resumed thread keeps the provider it was recorded with
        turns=(FixtureTurn(id=uuid7_like(seed + 1, WHEN), user=f"Hello {seed}", agent="Hi."),),
    )


@dataclasses.dataclass
class Setup:
    server: FakeResponsesServer
    home: Path
    workdir: Path
    outside: Path
    threads: list[FixtureThread]

    def config(self, **fields) -> AgentSourceConfig:
        return AgentSourceConfig(id="codex", driver="codex-app-server", codex_home=str(self.home), **fields)


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("codex-prompt")
    workdir, outside = root / "work", root / "outside"
    workdir.mkdir()
    outside.mkdir()
    threads = [thread(100 * n, workdir) for n in range(1, 10)]
    home = make_codex_home(root / "home", threads)
    with FakeResponsesServer() as server:
        # on-request: a command that asks to leave the sandbox makes Codex ask us first.
        write_fake_model_config(home, server.url, approval_policy="on-request")
        yield Setup(server, home, workdir, outside, threads)


@pytest.fixture(scope="module")
def driver(setup, codex_bin) -> Iterator[CodexAppServerDriver]:
    driver = CodexAppServerDriver(setup.config(codex_bin=codex_bin))
    try:
        driver.start()
        yield driver
    finally:
        driver.stop()


def prompt_in_thread(driver, thread_id: str, text: str, **options) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def body() -> None:
        outcome["result"] = driver.prompt(thread_id, PromptInput(text=text), CommandExecutionOptions(**options))

    worker = threading.Thread(target=body, daemon=True)
    worker.start()
    return worker, outcome


def test_a_prompt_runs_a_real_turn_and_the_next_read_shows_it(driver, setup):
    thread_id = setup.threads[0].id
    milestones = []
    result = driver.prompt(thread_id, PromptInput(text="Say hello"), CommandExecutionOptions(
        on_cancellation_ready=lambda: milestones.append("cancellation-ready"),
        on_session_active=lambda: milestones.append("session-active"),
    ))
    assert result.status == "succeeded"
    assert milestones == ["cancellation-ready", "session-active"]
    snapshot = driver.read_session(thread_id)
    last = snapshot.events[-1]
    assert last["id"] == result.provider_operation_id == result.result["turnId"]
    assert last["status"] == "completed"
    assert [(m.role, m.text) for m in snapshot.normalized_messages[-2:]] == [
        ("user", "Say hello"), ("assistant", "Hello from the fake model.")]
    assert snapshot.summary.active is False
    assert "Say hello" in setup.server.prompts


def test_the_session_reads_active_while_the_refresh_after_its_turn_started_runs(driver, setup):
    thread_id = setup.threads[1].id
    seen = {}

    def refresh() -> None:
        seen["read"] = driver.read_session(thread_id).summary.active
        seen["list"] = next(s.active for s in driver.list_sessions().sessions if s.native_session_id == thread_id)

    result = driver.prompt(thread_id, PromptInput(text="Quick one"), CommandExecutionOptions(on_session_active=refresh))
    assert result.status == "succeeded"
    assert seen == {"read": True, "list": True}
    assert driver.read_session(thread_id).summary.active is False


def test_cancel_interrupts_a_turn_the_fake_model_holds_open(driver, setup):
    thread_id = setup.threads[3].id
    ready = threading.Event()
    setup.server.hold_started.clear()
    worker, outcome = prompt_in_thread(driver, thread_id, "HOLD this turn", on_cancellation_ready=ready.set)
    ready.wait()
    setup.server.hold_started.wait()  # the model is really streaming the reply
    second = driver.prompt(thread_id, PromptInput(text="me too"))
    assert (second.status, second.error.code) == ("needs-confirmation", "prompt-in-progress")
    cancelled = driver.cancel(thread_id)
    worker.join()
    result = outcome["result"]
    assert cancelled.status == "succeeded"
    assert cancelled.provider_operation_id == result.provider_operation_id
    assert (result.status, result.error.code) == ("failed", "turn-interrupted")
    assert driver.read_session(thread_id).events[-1]["status"] == "interrupted"
    assert driver.cancel(thread_id).error.code == "no-active-turn"


def test_a_turn_the_model_fails_is_a_failed_prompt_with_codexs_error(driver, setup):
    result = driver.prompt(setup.threads[4].id, PromptInput(text="FAIL500 please"))
    assert (result.status, result.error.code) == ("failed", "turn-failed")
    assert "high demand" in result.error.message
    assert result.provider_operation_id == result.result["turnId"]


def test_a_prompt_on_an_unknown_thread_fails_with_codexs_reason(driver):
    result = driver.prompt(uuid7_like(4242, WHEN), PromptInput(text="anyone?"))
    assert (result.status, result.error.code) == ("failed", "provider-error")
    assert "no rollout found" in result.error.message


def test_approval_requests_are_declined_so_the_command_never_runs(driver, setup):
    target = setup.outside / "declined.txt"
    result = driver.prompt(setup.threads[5].id, PromptInput(text=f"RUN: ESCALATE touch {target}"))
    assert result.status == "succeeded"  # the model is told "rejected" and finishes its turn
    assert not target.exists()
    items = driver.read_session(setup.threads[5].id).events[-1]["items"]
    assert any("rejected" in str(item.get("text", "")) for item in items)


def test_only_allow_danger_full_access_lets_a_turn_write_outside_the_sandbox(driver, setup, codex_bin):
    target = setup.outside / "made.txt"
    text = f"RUN: touch {target}"
    assert driver.prompt(setup.threads[6].id, PromptInput(text=text)).status == "succeeded"
    assert not target.exists()  # read-only sandbox, and the escalation was declined
    unrestricted = CodexAppServerDriver(setup.config(codex_bin=codex_bin, allow_danger_full_access=True))
    try:
        unrestricted.start()
        # Another thread: the module's Codex keeps thread 6 loaded, and a thread has one writer.
        assert unrestricted.prompt(setup.threads[8].id, PromptInput(text=text)).status == "succeeded"
    finally:
        unrestricted.stop()
    assert target.exists()


def test_a_prompt_whose_codex_dies_mid_turn_is_unknown(setup, codex_bin):
    driver = CodexAppServerDriver(setup.config(codex_bin=codex_bin))
    ready = threading.Event()
    try:
        driver.start()
        worker, outcome = prompt_in_thread(driver, setup.threads[7].id, "HOLD forever",
                                           on_cancellation_ready=ready.set)
        ready.wait()
        os.kill(driver.transport.pid, signals.SIGKILL)
        worker.join()
    finally:
        driver.stop()
    result = outcome["result"]
    assert (result.status, result.error.code) == ("unknown", "transport-lost")
    assert result.provider_operation_id is not None
    assert "exited" in result.error.message


def test_fake_child_second_prompt_while_the_first_is_starting_needs_confirmation():
    driver = CodexAppServerDriver(AgentSourceConfig(
        id="codex", driver="codex-app-server", command=child_argv("hang-turn-start")))

    def hanging(note):
        return note["method"] == "test/hanging"

    try:
        driver.start()
        first, first_outcome = prompt_in_thread(driver, "thread-1", "first")
        first_request = driver.transport.wait_for_notification(hanging)["params"]["for"]
        second = driver.prompt("thread-1", PromptInput(text="second"))
        assert (second.status, second.error.code) == ("needs-confirmation", "prompt-in-progress")
        assert driver.cancel("thread-1").error.code == "no-active-turn"  # no turn id yet
        # Another session is not held up: its prompt reaches turn/start too.
        other, other_outcome = prompt_in_thread(driver, "thread-2", "elsewhere")
        driver.transport.wait_for_notification(
            lambda note: hanging(note) and note["params"]["for"] != first_request)
    finally:
        driver.stop()
    first.join()
    other.join()
    # turn/start was sent and never answered: whether a turn began cannot be known.
    for outcome in (first_outcome, other_outcome):
        assert (outcome["result"].status, outcome["result"].error.code) == ("unknown", "transport-lost")

"""`agentctl command` on a Claude source as real processes: the real pinned Claude Agent
SDK and its bundled Claude Code CLI running real turns offline against the fake Messages
API on 127.0.0.1, over a real SQLite store, each command with its receipt."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.claude_home import FixtureSession, FixtureTurn, make_config_dir, session_id
from tests.support.claude_prompts import claude_env
from tests.support.cli import AGENTCTL, agentctl_env, run
from tests.support.fake_anthropic_server import REPLY_PREFIX, FakeAnthropicServer

WHEN = datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
GUARD_SECONDS = 120  # a guard against a hang, never the measure of a test


class World:
    def __init__(self, root: Path, server: FakeAnthropicServer) -> None:
        self.root = root
        self.work = root / "work"
        self.work.mkdir()
        self.sessions = [
            FixtureSession(id=session_id(f"cli-command-{root.name}-{n}"), cwd=str(self.work),
                           turns=(FixtureTurn(f"Earlier question {n}", "Earlier answer."),),
                           created_at=WHEN, updated_at=WHEN, branch=None)
            for n in range(4)
        ]
        config_dir = make_config_dir(root / "claude-config", self.sessions)
        env = claude_env(server.url, root / "home")
        lines = [f'[sources.claude]\ndriver = "claude-agent-sdk"\nconfigDir = "{config_dir}"\ncwd = "{self.work}"\n',
                 "[sources.claude.env]\n", *(f'{key} = "{value}"\n' for key, value in env.items())]
        self.config = root / "config.toml"
        self.config.write_text("".join(lines))
        self.env = agentctl_env(root / "state", self.config, AGENTCTL_STORE=f"sqlite:///{root / 'fabric.sqlite3'}")

    def session(self, n: int) -> str:
        return self.sessions[n].id

    def run(self, *args: str):
        return run(list(args), self.env, timeout=GUARD_SECONDS)


@pytest.fixture(scope="module")
def server():
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture
def world(tmp_path, server) -> World:
    server.reset()
    yield World(tmp_path, server)
    server.release_holds()


def wait_until(condition) -> None:
    deadline = time.monotonic() + GUARD_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition never became true")
        time.sleep(0.05)


def status_of(world: World, command_id: str) -> str | None:
    shown = world.run("command", "status", command_id)
    receipts = shown.of("receipt") if shown.returncode != 5 else []
    return receipts[0]["status"] if receipts else None


def test_a_prompt_resumes_a_session_and_prints_a_succeeded_receipt(world):
    session = world.session(0)
    done = world.run("command", "prompt", "claude", session, "Say hello")
    assert done.returncode == 0, done.stderr
    [receipt] = done.of("receipt")
    assert (receipt["status"], receipt["sourceId"], receipt["nativeSessionId"]) == ("succeeded", "claude", session)
    assert receipt["result"]["sessionId"] == session and receipt["providerOperationId"]
    shown = world.run("show", f"claude/{session}", "--json")
    assert shown.returncode == 0, shown.stderr
    assert REPLY_PREFIX + "Say hello" in shown.stdout and "Earlier question 0" in shown.stdout


def test_a_headless_start_with_a_chosen_id_then_a_resume_each_with_its_receipt(world):
    new = str(uuid.uuid4())
    started = world.run("command", "start", "claude", "Begin the work", "--session", new, "--title", "From the CLI")
    assert started.returncode == 0, started.stderr
    [receipt] = started.of("receipt")
    assert receipt["status"] == "succeeded" and receipt["nativeSessionId"] == new
    assert (receipt["result"]["nativeSessionId"], receipt["result"]["cwd"]) == (new, str(world.work))
    # A new process: the prompt looks the session up before it resumes it.
    resumed = world.run("command", "prompt", "claude", new, "Carry on")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.of("receipt")[0]["status"] == "succeeded"
    listed = {s["summary"]["nativeSessionId"]: s["summary"] for s in world.run("list", "claude").of("summary")}
    assert listed[new]["title"] == "From the CLI" and listed[new]["cwd"] == str(world.work)


def test_cancel_interrupts_a_prompt_the_fake_model_holds_open(world, server):
    session = world.session(1)
    executor = subprocess.Popen([AGENTCTL, "command", "run", "--follow"], env=world.env, text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        submitted = world.run("command", "submit", "prompt", "claude", session, "--text", "HOLD this turn")
        assert submitted.returncode == 0, submitted.stderr
        prompt_id = submitted.stdout.strip()
        assert server.hold_started.wait(GUARD_SECONDS)
        cancelled = world.run("command", "cancel", "claude", session)
        assert cancelled.returncode == 0, cancelled.stderr
        assert cancelled.of("receipt")[0]["status"] == "succeeded"
        wait_until(lambda: status_of(world, prompt_id) not in (None, "pending", "in-flight"))
        prompt = world.run("command", "status", prompt_id)
        assert prompt.returncode == 1, prompt.stdout
        assert prompt.of("receipt")[0]["error"]["code"] == "prompt-interrupted"
    finally:
        executor.send_signal(signal.SIGTERM)
        out, err = executor.communicate(timeout=GUARD_SECONDS)
    assert executor.returncode == 143, err
    assert prompt_id in [json.loads(line)["commandId"] for line in out.splitlines()]


def test_a_model_api_error_gives_a_failed_receipt_and_exit_1(world):
    done = world.run("command", "prompt", "claude", world.session(2), "FAIL500 now")
    assert done.returncode == 1, done.stderr
    [receipt] = done.of("receipt")
    assert receipt["status"] == "failed" and receipt["error"]["code"] == "api-error"


def test_rename_set_mode_and_model_through_agentctl_command(world):
    session = world.session(3)
    renamed = world.run("command", "rename", "claude", session, "Renamed by agentctl")
    assert renamed.returncode == 0 and renamed.of("receipt")[0]["status"] == "succeeded", renamed.stderr
    listed = {s["summary"]["nativeSessionId"]: s["summary"] for s in world.run("list", "claude").of("summary")}
    assert listed[session]["title"] == "Renamed by agentctl"
    mode = world.run("command", "set-mode", "claude", session, "plan")
    assert mode.returncode == 0 and mode.of("receipt")[0]["status"] == "succeeded", mode.stderr
    bypass = world.run("command", "set-mode", "claude", session, "bypassPermissions")
    assert bypass.of("receipt")[0]["status"] == "unsupported"
    model = world.run("command", "set-config-option", "claude", session, "model", "claude-sonnet-5-5")
    assert model.returncode == 0 and model.of("receipt")[0]["status"] == "succeeded", model.stderr

"""`agentctl command`, `agentctl receipts` and `agentctl recover` as real processes: the
real pinned `codex app-server` running real turns offline against the fake Responses API
on 127.0.0.1, over a real SQLite store."""

from __future__ import annotations

import codecs
import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lib.commands import COMMAND_SCHEMA
from lib.fabric.cell_id import cell_id, commands_cause
from lib.fabric.identity import load_or_create_identity
from lib.fabric.store import open_store
from lib.fabric.target import FabricTarget
from tests.support.cli import AGENTCTL, CODEX_BIN, agentctl_env, run
from tests.support.codex_home import (
    FixtureThread,
    FixtureTurn,
    make_codex_home,
    uuid7_like,
    write_fake_model_config,
)
from tests.support.fake_responses_server import FakeResponsesServer

WHEN = datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
GUARD_SECONDS = 120  # a guard against a hang, never the measure of a test


def fixture_thread(seed: int, workdir: Path) -> FixtureThread:
    return FixtureThread(
        id=uuid7_like(seed, WHEN), created_at=WHEN, cwd=str(workdir), model_provider="fake",
        turns=(FixtureTurn(id=uuid7_like(seed + 1, WHEN), user=f"Hello {seed}", agent="Hi."),),
    )


class World:
    def __init__(self, root: Path, server: FakeResponsesServer) -> None:
        self.root = root
        self.server = server
        workdir = root / "work"
        workdir.mkdir()
        self.threads = [fixture_thread(100 * n, workdir) for n in range(1, 8)]
        home = make_codex_home(root / "home", self.threads)
        write_fake_model_config(home, server.url)
        self.config = root / "config.toml"
        self.config.write_text(
            f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\ncodexBin = "{CODEX_BIN}"\n')
        self.store_url = f"sqlite:///{root / 'fabric.sqlite3'}"
        self.env = agentctl_env(root / "state", self.config, AGENTCTL_STORE=self.store_url)

    def thread(self, n: int) -> str:
        return self.threads[n].id

    def run(self, *args: str, input: str | None = None, timeout: float = GUARD_SECONDS):
        return run(list(args), self.env, input=input, timeout=timeout)

    def start_executor(self) -> subprocess.Popen:
        proc = subprocess.Popen([AGENTCTL, "command", "run", "--follow"], env=self.env, text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_until(lambda: "as they arrive" in _peek_stderr(proc) or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read()
        return proc

    def target(self) -> FabricTarget:
        identity = load_or_create_identity(self.root / "state" / "identity.json")
        return FabricTarget.open(open_store(self.store_url), space=identity.did, owner=identity.did)


_stderr_seen: dict[int, str] = {}
_stderr_decoders: dict[int, codecs.IncrementalDecoder] = {}


def _peek_stderr(proc: subprocess.Popen) -> str:
    """What the process wrote to stderr so far (kept). Read from the descriptor itself:
    a `readline` on the text stream buffers every line that arrived with the one it
    returns, and `select` on the descriptor then never reports those again, so a line
    written together with an earlier one was never seen (a flaky wait)."""
    import select

    text = _stderr_seen.get(proc.pid, "")
    decoder = _stderr_decoders.setdefault(proc.pid, codecs.getincrementaldecoder("utf-8")("replace"))
    fd = proc.stderr.fileno()
    while select.select([fd], [], [], 0.05)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        text += decoder.decode(chunk)
    _stderr_seen[proc.pid] = text
    return text


def wait_until(condition, guard: float = GUARD_SECONDS) -> None:
    deadline = time.monotonic() + guard
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition never became true")
        time.sleep(0.05)


def stop(proc: subprocess.Popen) -> tuple[str, str]:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=GUARD_SECONDS)
    return out, _stderr_seen.pop(proc.pid, "") + err


@pytest.fixture(scope="module")
def server():
    with FakeResponsesServer() as server:
        yield server


@pytest.fixture
def world(tmp_path, server) -> World:
    server.hold_started.clear()
    return World(tmp_path, server)


def test_a_one_shot_prompt_prints_a_succeeded_receipt_and_show_then_holds_the_reply(world):
    thread = world.thread(0)
    done = world.run("command", "prompt", "codex", thread, "Say hello")
    assert done.returncode == 0, done.stderr
    [receipt] = done.of("receipt")
    assert (receipt["status"], receipt["sourceId"], receipt["nativeSessionId"]) == ("succeeded", "codex", thread)
    assert receipt["providerOperationId"] == receipt["result"]["turnId"]
    shown = world.run("show", f"codex/{thread}", "--json")
    assert shown.returncode == 0, shown.stderr
    assert "Hello from the fake model." in shown.stdout
    status = world.run("command", "status", receipt["commandId"])
    assert status.returncode == 0 and status.of("receipt")[0]["status"] == "succeeded"
    rows = world.run("receipts").of("receipt-row")
    assert [(r["commandId"], r["status"]) for r in rows] == [(receipt["commandId"], "succeeded")]


def test_a_one_shot_prompt_hands_its_command_to_a_running_executor(world):
    executor = world.start_executor()
    try:
        done = world.run("command", "prompt", "codex", world.thread(1), "Say hello")
        assert done.returncode == 0, done.stderr
        assert "waiting for its receipt" in done.stderr
        [receipt] = done.of("receipt")
        assert receipt["status"] == "succeeded"
    finally:
        out, err = stop(executor)
    # the executor printed the receipt it produced, and stopped in order
    assert [r["commandId"] for r in map(json.loads, out.splitlines())] == [receipt["commandId"]]
    assert executor.returncode == 143, err


def test_a_second_executor_fails_at_once_naming_the_first(world):
    executor = world.start_executor()
    try:
        second = world.run("command", "run")
        assert second.returncode == 4
        assert "executor lock" in second.stderr and f"pid {executor.pid}" in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1
    finally:
        stop(executor)


def test_cancel_interrupts_a_prompt_the_fake_model_holds_open(world):
    thread = world.thread(2)
    executor = world.start_executor()
    try:
        submitted = world.run("command", "submit", "prompt", "codex", thread, "--text", "HOLD this turn")
        assert submitted.returncode == 0, submitted.stderr
        prompt_id = submitted.stdout.strip()
        assert world.server.hold_started.wait(GUARD_SECONDS)
        cancelled = world.run("command", "cancel", "codex", thread)
        assert cancelled.returncode == 0, cancelled.stderr
        assert cancelled.of("receipt")[0]["status"] == "succeeded"
        wait_until(lambda: world.run("command", "status", prompt_id).returncode != 0)
        prompt = world.run("command", "status", prompt_id)
        assert prompt.returncode == 1
        assert prompt.of("receipt")[0]["error"]["code"] == "turn-interrupted"
    finally:
        stop(executor)


def test_an_executor_killed_mid_prompt_leaves_an_unknown_receipt_after_recover_and_never_reruns(world):
    thread = world.thread(3)
    executor = world.start_executor()
    submitted = world.run("command", "submit", "prompt", "codex", thread, "--text", "HOLD until killed")
    command_id = submitted.stdout.strip()
    assert world.server.hold_started.wait(GUARD_SECONDS)
    before = world.run("command", "status", command_id)
    assert before.of("receipt")[0]["status"] == "in-flight"
    executor.send_signal(signal.SIGKILL)
    executor.communicate(timeout=GUARD_SECONDS)
    world.server.release_holds()
    prompts_before = world.server.prompts.count("HOLD until killed")

    recovered = world.run("recover")
    assert recovered.returncode == 0, recovered.stderr
    [receipt] = recovered.of("receipt")
    assert (receipt["commandId"], receipt["status"]) == (command_id, "unknown")
    assert world.run("recover").of("receipt") == []  # idempotent

    status = world.run("command", "status", command_id)
    assert status.returncode == 7 and status.of("receipt")[0]["status"] == "unknown"
    again = world.run("command", "run")  # the command is still in its queue
    assert again.returncode == 0, again.stderr
    assert world.server.prompts.count("HOLD until killed") == prompts_before
    assert world.run("command", "status", command_id).of("receipt")[0]["status"] == "unknown"


def test_bad_commands_at_submit_get_one_line_and_exit_2(world):
    thread = world.thread(4)
    cases = [
        ["command", "submit", "explode", "codex", thread],
        ["command", "submit", "prompt", "codex", thread, "--text", "-"],  # 128 KiB + 1 on stdin
        ["command", "submit", "prompt", "nosuch", thread, "--text", "hi"],
        ["command", "submit", "rename", "codex", thread],
        ["command", "prompt", "nosuch", thread, "hi"],
    ]
    for args in cases:
        done = world.run(*args, input="x" * (128 * 1024 + 1) if "-" in args else None)
        assert done.returncode == 2, (args[:4], done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr and done.stdout == ""


def test_bad_values_in_a_queue_are_skipped_and_the_rest_of_the_batch_runs(world):
    thread = world.thread(5)
    target = world.target()
    good = {"schema": COMMAND_SCHEMA, "ownerDid": target.owner, "id": "good-1", "createdAt": "now",
            "sourceId": "codex", "nativeSessionId": thread, "type": "rename", "payload": {"title": "Renamed"}}
    unknown_session = {**good, "id": "ghost-1", "nativeSessionId": uuid7_like(999, WHEN)}
    queue = [
        "{not json",
        {**good, "id": "stranger-1", "ownerDid": "did:key:z6MkStranger"},
        {**good, "id": "bad-fields-1", "payload": {"title": 42}},
        good,
        unknown_session,
    ]
    with target.store.transaction(target.space, target.writer) as tx:
        tx.write(cell_id(commands_cause(target.space, target.owner)), queue)
        tx.commit()
    target.store.close()
    done = world.run("command", "run")
    assert done.returncode == 0, done.stderr
    skipped = [line for line in done.stderr.splitlines() if "skipping command" in line]
    assert len(skipped) == 3, done.stderr  # each bad one named in one line, without -v
    statuses = {r["commandId"]: r["status"] for r in done.of("receipt")}
    assert statuses == {"good-1": "succeeded", "ghost-1": "failed"}
    assert "Traceback" not in done.stderr
    assert "stranger-1" not in statuses and "bad-fields-1" not in statuses
    assert world.run("command", "status", "stranger-1").returncode == 5


def test_the_same_command_delivered_twice_runs_once(world):
    thread = world.thread(6)
    done = world.run("command", "submit", "prompt", "codex", thread, "--text", "Once only", "--id", "once-1")
    assert done.returncode == 0, done.stderr
    first = world.run("command", "run")
    assert [r["status"] for r in first.of("receipt")] == ["succeeded"]
    again = world.run("command", "submit", "prompt", "codex", thread, "--text", "Once only", "--id", "once-1")
    assert again.returncode == 0, again.stderr
    second = world.run("command", "run")
    assert second.returncode == 0 and second.of("receipt") == []
    assert world.server.prompts.count("Once only") == 1


def test_a_one_shot_waiting_for_an_executor_that_goes_away_carries_its_command_out_itself(world):
    target = world.target()
    held = target.store.lock(target.space, "executor", timeout=0)
    held.acquire()  # an executor that never gets to the command (or a lock held for a moment)
    proc = subprocess.Popen([AGENTCTL, "command", "prompt", "codex", world.thread(4), "Say hello"],
                            env=world.env, text=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: "waiting for its receipt" in _peek_stderr(proc) or proc.poll() is not None)
    finally:
        held.release()
        target.store.close()
    out, err = proc.communicate(timeout=GUARD_SECONDS)
    assert proc.returncode == 0, err
    assert [json.loads(line)["status"] for line in out.splitlines()] == ["succeeded"]

"""`agentctl serve` as a real process over the real pinned Codex program and the fake
Responses API on 127.0.0.1: a prompt sent from another process runs and its session is
refreshed, SIGHUP collects again, SIGTERM stops in order."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from lib.executor import EXECUTOR_LOCK
from lib.fabric.graph_read import read_graph_value
from tests.support.cli import AGENTCTL
from tests.test_cli_commands import GUARD_SECONDS, World, wait_until


def health_of(world: World) -> dict | None:
    target = world.target()
    try:
        if target.store.read(target.space, target.health_cell_id()) is None:
            return None
        return read_graph_value(target.store, target.space, target.health_cell_id())
    finally:
        target.store.close()


def start_host(world: World, *args: str) -> subprocess.Popen:
    proc = subprocess.Popen([AGENTCTL, "serve", "--interval", "0", *args], env=world.env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: (health_of(world) or {}).get("status") == "ready" or proc.poll() is not None)
    assert proc.poll() is None, proc.communicate()
    return proc


@pytest.fixture
def world(tmp_path, server) -> World:  # noqa: F811 - the module fixture of test_cli_commands
    server.hold_started.clear()
    return World(tmp_path, server)


@pytest.fixture(scope="module")
def server():
    from tests.support.fake_responses_server import FakeResponsesServer

    with FakeResponsesServer() as server:
        yield server


def test_serve_runs_a_prompt_sent_from_another_process_collects_on_sighup_and_stops_in_order(world):
    host = start_host(world)
    try:
        first = health_of(world)
        assert [s["lifecycle"] for s in first["sources"]] == ["running"]
        assert first["collection"]["lastComplete"] is True
        thread = world.thread(0)

        done = world.run("command", "prompt", "codex", thread, "Say hello")
        assert done.returncode == 0, done.stderr
        assert done.of("receipt")[0]["status"] == "succeeded"
        assert "waiting for its receipt" in done.stderr  # the host carried it out
        wait_until(lambda: "Hello from the fake model." in world.run("show", f"codex/{thread}", "--json").stdout)

        before = health_of(world)["collection"]["lastFinishedAt"]
        host.send_signal(signal.SIGHUP)
        wait_until(lambda: health_of(world)["collection"]["lastFinishedAt"] != before)
    finally:
        host.send_signal(signal.SIGTERM)
        out, err = host.communicate(timeout=GUARD_SECONDS)
    assert host.returncode == 143, err
    final = health_of(world)
    assert final["status"] == "stopped"
    assert [s["lifecycle"] for s in final["sources"]] == ["stopped"]
    # the executor lock is free again: a new executor can start at once
    target = world.target()
    lock = target.store.lock(target.space, EXECUTOR_LOCK, timeout=0)
    lock.acquire()
    lock.release()
    target.store.close()
    assert [json.loads(line)["status"] for line in out.splitlines()] == ["succeeded"]


def test_a_second_host_exits_4_naming_the_first(world):
    host = start_host(world)
    try:
        second = world.run("serve", "--interval", "0")
        assert second.returncode == 4
        assert f"pid {host.pid}" in second.stderr
    finally:
        host.send_signal(signal.SIGTERM)
        host.communicate(timeout=GUARD_SECONDS)


def test_sigterm_during_a_prompt_lets_the_prompt_finish_before_the_host_stops(world):
    host = start_host(world)
    thread = world.thread(1)
    submitted = world.run("command", "submit", "prompt", "codex", thread, "--text", "HOLD until released")
    command_id = submitted.stdout.strip()
    assert world.server.hold_started.wait(GUARD_SECONDS)
    host.send_signal(signal.SIGTERM)
    host.send_signal(signal.SIGTERM)  # a second signal does not skip the drain
    wait_until(lambda: health_of(world)["status"] == "stopping")
    assert host.poll() is None  # the held prompt keeps it draining, however many signals
    world.server.release_holds()
    host.communicate(timeout=GUARD_SECONDS)
    assert host.returncode == 143
    status = world.run("command", "status", command_id)
    assert status.of("receipt")[0]["status"] == "succeeded"
    assert health_of(world)["status"] == "stopped"

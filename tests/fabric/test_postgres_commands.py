"""Commands from anywhere on a shared PostgreSQL store: two hosts (`agentctl serve`,
each with its own state directory, as on two machines) start at once on one space;
the executor lock (an advisory lock) lets exactly one run, and a prompt submitted
from a third process is carried out once, by that host, its receipt readable from
every machine. Real processes: the pinned `codex app-server` against the fake
Responses API on 127.0.0.1, and a throwaway PostgreSQL server on a Unix socket."""

from __future__ import annotations

import signal
import subprocess

import pytest

from lib.fabric.graph_read import read_graph_value
from lib.fabric.identity import load_or_create_identity
from lib.fabric.store import open_store
from lib.fabric.target import FabricTarget
from tests.support.cli import AGENTCTL, agentctl_env, run
from tests.test_cli_commands import GUARD_SECONDS, World, wait_until


@pytest.fixture(scope="module")
def server():
    from tests.support.fake_responses_server import FakeResponsesServer

    with FakeResponsesServer() as server:
        yield server


class SharedWorld(World):
    """World's Codex home and threads, on a PostgreSQL store, seen from three machines
    (state directories) that share one identity, hence one space."""

    def __init__(self, root, server, store_url: str) -> None:
        super().__init__(root, server)
        self.store_url = store_url
        self.identity = root / "identity.json"
        self.owner = load_or_create_identity(self.identity).did
        self.machines = {
            name: agentctl_env(root / name, self.config, AGENTCTL_STORE=store_url,
                               AGENTCTL_IDENTITY=str(self.identity))
            for name in ("host-a", "host-b", "submitter")
        }

    def target(self) -> FabricTarget:
        return FabricTarget.open(open_store(self.store_url), space=self.owner, owner=self.owner)

    def health(self) -> dict | None:
        target = self.target()
        try:
            if target.store.read(target.space, target.health_cell_id()) is None:
                return None
            return read_graph_value(target.store, target.space, target.health_cell_id())
        finally:
            target.store.close()


def test_a_command_from_a_third_machine_runs_once_on_one_of_two_hosts(tmp_path, server, postgres_url):
    server.hold_started.clear()
    world = SharedWorld(tmp_path, server, postgres_url)
    hosts = {
        name: subprocess.Popen([AGENTCTL, "serve", "--interval", "0"], env=world.machines[name],
                               text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        for name in ("host-a", "host-b")
    }
    try:
        wait_until(lambda: any(proc.poll() is not None for proc in hosts.values()))
        [loser] = [name for name, proc in hosts.items() if proc.poll() is not None]
        [winner] = [name for name in hosts if name != loser]
        _out, err = hosts[loser].communicate(timeout=GUARD_SECONDS)
        assert hosts[loser].returncode == 4, err
        assert f"pid {hosts[winner].pid}" in err  # the advisory lock's holder note
        wait_until(lambda: (world.health() or {}).get("status") == "ready"
                   or hosts[winner].poll() is not None)
        assert hosts[winner].poll() is None

        thread = world.thread(0)
        done = run(["command", "prompt", "codex", thread, "Say hello from the submitter"],
                   world.machines["submitter"], timeout=GUARD_SECONDS)
        assert done.returncode == 0, done.stderr
        assert "waiting for its receipt" in done.stderr  # the running host carried it out
        [receipt] = done.of("receipt")
        assert receipt["status"] == "succeeded"
        assert server.prompts.count("Say hello from the submitter") == 1  # exactly once

        for machine in ("host-a", "host-b", "submitter"):
            rows = run(["receipts"], world.machines[machine]).of("receipt-row")
            assert [(r["commandId"], r["status"]) for r in rows] == [(receipt["commandId"], "succeeded")]
    finally:
        for proc in hosts.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.communicate(timeout=GUARD_SECONDS)
    assert hosts[winner].returncode == 143

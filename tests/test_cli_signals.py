"""SIGTERM ends `agentctl` like SIGINT, in order (issue 9, item 11): the provider and what
it started are ended, locks are released, one line goes to stderr, and the exit code is 143.

The provider is the fake child in `hang-read` mode: it lists one thread and never answers
its read, after starting a grandchild and naming both in a pid file. The test waits for
that file (the read is then pending), so SIGTERM arrives in the middle of a provider call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess

from lib.fabric.store import open_store
from lib.workspace import Workspace
from tests.support.cli import AGENTCTL, agentctl_env
from tests.support.fake_codex_child import child_argv
from tests.support.processes import gone, poll

GUARD_SECONDS = 60


def test_sigterm_during_a_provider_read_stops_the_provider_and_its_children_frees_the_lock_and_exits_143(tmp_path):
    pid_file = tmp_path / "provider.pid"
    config = tmp_path / "config.toml"
    config.write_text(
        f'[sources.fake]\ndriver = "codex-app-server"\ncommand = {json.dumps(child_argv("hang-read"))}\n'
        f"env = {{ FAKE_CODEX_PID_FILE = {json.dumps(str(pid_file))} }}\n"
    )
    env = agentctl_env(tmp_path / "state", config)
    sync = subprocess.Popen([AGENTCTL, "sync", "--json"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        poll(lambda: pid_file.exists() or sync.poll() is not None, "the provider's read to begin")
        assert sync.poll() is None, sync.communicate()
        pids = [int(pid) for pid in pid_file.read_text().split()]
        sync.send_signal(signal.SIGTERM)
        _, stderr = sync.communicate(timeout=GUARD_SECONDS)
    finally:
        if sync.poll() is None:
            sync.kill()
            sync.communicate()
    try:
        assert sync.returncode == 143, stderr
        assert len(stderr.splitlines()) == 1 and stderr.startswith("agentctl: terminated"), stderr
        provider, grandchild = pids
        poll(lambda: gone(provider), f"the provider (pid {provider}) to end")
        poll(lambda: gone(grandchild), f"the process the provider started (pid {grandchild}) to end")
    finally:
        for pid in pids:  # on failure, leave nothing running
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
    workspace = Workspace(config_path=str(config), state_dir=str(tmp_path / "state"))
    with open_store(workspace.resolved_store_url) as store:
        lock = store.lock(workspace.space_did, "publish")
        lock.acquire(timeout=0)  # PublishLockHeld if the killed run still held it
        lock.release()

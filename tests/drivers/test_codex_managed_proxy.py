"""`managed` and `proxy` modes against the real Codex daemon, in a private CODEX_HOME.

The daemon's control socket speaks WebSocket and `codex app-server proxy` relays it over
stdio, so these tests prove the WebSocket framing against the real thing. The module
starts one daemon (through the managed driver) and always stops it, with the daemon's
updater process, whatever happens.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal as signals
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lib.drivers.base import DriverError
from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.types import AgentSourceConfig, PromptInput
from tests.support.codex_home import demo_threads, make_codex_home, write_fake_model_config
from tests.support.fake_responses_server import FakeResponsesServer

SOCKET = "app-server-control/app-server-control.sock"


def stop_daemon(codex_bin: str, home: Path) -> None:
    """`daemon stop`, then end the updater it leaves running (by the pid it recorded)."""
    env = {**os.environ, "CODEX_HOME": str(home)}
    subprocess.run([codex_bin, "app-server", "daemon", "stop"], env=env, capture_output=True,
                   stdin=subprocess.DEVNULL, check=False)
    pid_file = home / "app-server-daemon" / "daemon-updater.pid"
    try:
        pid = json.loads(pid_file.read_text())["pid"]
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if str(home).encode() not in cmdline.read():
                return  # the pid was reused by a process that is not ours
        os.kill(pid, signals.SIGTERM)
    except (OSError, ValueError, KeyError):
        pass


@pytest.fixture(scope="module")
def daemon_home(codex_bin) -> Iterator[tuple[Path, FakeResponsesServer]]:
    # A short path: the daemon's unix socket lives under CODEX_HOME (108-byte limit).
    root = Path(tempfile.mkdtemp(prefix="cxd"))
    home = root / "h"
    workdir = root / "w"
    workdir.mkdir()
    threads = [dataclasses.replace(t, model_provider="fake", cwd=str(workdir)) for t in demo_threads()]
    make_codex_home(home, threads)
    try:
        with FakeResponsesServer() as server:
            write_fake_model_config(home, server.url)
            yield home, server
    finally:
        stop_daemon(codex_bin, home)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def managed(codex_bin, daemon_home) -> Iterator[CodexAppServerDriver]:
    home, _ = daemon_home
    driver = CodexAppServerDriver(AgentSourceConfig(
        id="codex", driver="codex-app-server", codex_bin=codex_bin, codex_home=str(home),
        codex_transport="managed"))
    try:
        driver.start()
        yield driver
    finally:
        driver.stop()


def all_ids(driver) -> list[str]:
    ids, cursor = [], None
    while True:
        page = driver.list_sessions(cursor)
        ids += [s.native_session_id for s in page.sessions]
        if page.next_cursor is None:
            return ids
        cursor = page.next_cursor


def test_managed_mode_starts_the_daemon_and_lists_and_reads_through_the_proxy(managed, daemon_home):
    home, _ = daemon_home
    assert (home / SOCKET).exists()
    assert sorted(all_ids(managed)) == sorted(t.id for t in demo_threads())
    thread = demo_threads()[0]
    snapshot = managed.read_session(thread.id)
    assert [event["id"] for event in snapshot.events] == [turn.id for turn in thread.turns]
    assert managed.source.provider_version == "0.169.0"


def test_a_prompt_through_the_managed_daemon_succeeds_and_shows_in_the_next_read(managed):
    thread_id = demo_threads()[1].id
    result = managed.prompt(thread_id, PromptInput(text="Hello through the daemon"))
    assert result.status == "succeeded"
    assert managed.read_session(thread_id).events[-1]["id"] == result.provider_operation_id


def test_proxy_mode_with_the_daemons_socket_sees_the_same_threads(codex_bin, managed, daemon_home):
    home, _ = daemon_home
    driver = CodexAppServerDriver(AgentSourceConfig(
        id="codex", driver="codex-app-server", codex_bin=codex_bin, codex_home=str(home),
        codex_transport="proxy", codex_socket=str(home / SOCKET)))
    try:
        driver.start()
        assert sorted(all_ids(driver)) == sorted(all_ids(managed))
    finally:
        driver.stop()


def test_proxy_mode_without_a_daemon_fails_the_start_with_codexs_reason_as_detail(codex_bin, short_tmp):
    driver = CodexAppServerDriver(AgentSourceConfig(
        id="codex", driver="codex-app-server", codex_bin=codex_bin, codex_home=str(short_tmp),
        codex_transport="proxy", codex_socket=str(short_tmp / "missing.sock")))
    try:
        with pytest.raises(DriverError) as caught:
            driver.start()
    finally:
        driver.stop()
    assert caught.value.code == "start-failed"
    assert "failed to connect to socket" not in caught.value.message
    assert "failed to connect to socket" in caught.value.detail

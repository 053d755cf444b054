"""The host (lib/host.py) in one process with fake drivers, for what a real provider
cannot be made to show on cue: a collection held open while requests pile up, and a
source that cannot start."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from lib.drivers.base import DriverUnavailable
from lib.host import Host
from lib.workspace import Workspace
from tests.support.scripted_driver import ScriptedDriver
from tests.support.sessions import make_snapshot

GUARD = 60


def _workspace(tmp_path: Path, *sources: str) -> Workspace:
    config = tmp_path / "config.toml"
    config.write_text("".join(
        f'[sources.{s}]\ndriver = "codex-app-server"\ncodexHome = "{tmp_path / s}"\n' for s in sources))
    return Workspace(config_path=config, store_url=f"sqlite:///{tmp_path / 'fabric.db'}",
                     state_dir=tmp_path / "state")


def _until(condition, what: str) -> None:
    done = threading.Event()
    for _ in range(int(GUARD / 0.01)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError(f"never: {what}")


class Running:
    """A host running on a thread of its own; `stop()` ends it in order."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.host.run()
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def stop(self) -> None:
        self.host.stop()
        self.thread.join(GUARD)
        assert not self.thread.is_alive(), "the host did not stop"
        if self.error is not None:
            raise self.error


def test_fake_held_collection_requests_arriving_meanwhile_make_one_more_collection(tmp_path: Path) -> None:
    driver = ScriptedDriver(source_id="a", snapshots=[make_snapshot("s1")])
    held = driver.gate("list", None)
    host = Host(_workspace(tmp_path, "a"), interval=0, driver_factory=lambda _sid: driver)
    running = Running(host)
    try:
        held.wait_reached()  # the first collection is listing
        for _ in range(5):
            host.request_collection("test")
        assert host.health.record()["collection"]["pending"] is True
        held.open()
        _until(lambda: host.collections == 2 and not host.health.record()["collection"]["running"],
               "the second collection finished")
    finally:
        running.stop()
    assert host.collections == 2  # the five requests were served by one collection
    assert len(driver.calls_of("list")) == 2


def test_fake_source_that_cannot_start_is_failed_in_health_and_the_others_go_on(tmp_path: Path) -> None:
    good = ScriptedDriver(source_id="good", snapshots=[make_snapshot("s1")])

    def factory(source_id: str):
        if source_id == "broken":
            raise DriverUnavailable("program-missing", "the broken source's program is not installed")
        return good

    workspace = _workspace(tmp_path, "broken", "good")
    host = Host(workspace, interval=0, driver_factory=factory)
    running = Running(host)
    try:
        _until(lambda: host.health is not None and host.health.record()["status"] == "degraded",
               "the host runs degraded")
        record = host.health.record()
        lifecycles = {s["id"]: s["lifecycle"] for s in record["sources"]}
        assert lifecycles == {"broken": "failed", "good": "running"}
        assert any("broken" in reason for reason in record["reasons"])
        assert record["commands"]["admitting"] is True
    finally:
        running.stop()
    assert "good/s1" in workspace.open_target(read_only=True).published_sessions()


def test_a_host_that_cannot_take_the_executor_lock_fails_at_once(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, "a")
    target = workspace.open_target()
    holder = target.store.lock(target.space, "executor", timeout=0)
    holder.acquire()
    try:
        with pytest.raises(Exception) as caught:
            Host(_workspace(tmp_path, "a"), interval=0,
                 driver_factory=lambda _sid: ScriptedDriver(source_id="a")).run()
        assert caught.value.exit_code == 4
    finally:
        holder.release()


def test_a_provider_that_never_answers_cannot_hold_the_stop(tmp_path: Path) -> None:
    # A real ACP agent (the project's test agent) that never answers session/list: the
    # host's first collection waits on it until the stop's grace runs out and the host
    # stops the provider, which ends the wait.
    from tests.support.acp_agents import agent_argv

    home = tmp_path / "agent-home"
    home.mkdir()
    argv = ", ".join(f'"{a}"' for a in agent_argv(home, "--hang-on", "session/list"))
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.stuck]\ndriver = "acp"\ncwd = "{tmp_path}"\ncommand = [{argv}]\n')
    workspace = Workspace(config_path=config, store_url=f"sqlite:///{tmp_path / 'fabric.db'}",
                          state_dir=tmp_path / "state")
    notes: list[str] = []
    host = Host(workspace, interval=0, shutdown_grace=1.0, notify=notes.append)
    running = Running(host)
    _until(lambda: host.health is not None and host.health.record()["collection"]["running"],
           "the first collection is waiting on the agent")
    running.stop()  # asserts the host stopped within the guard
    record = host.health.record()
    assert record["status"] == "stopped"
    assert any("did not finish within 1 s of the stop" in note for note in notes)

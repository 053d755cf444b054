"""Providers started early (`DriverPool.start_early`, `run_sync(start_early=True)`, which
`agentctl sync` uses): each listed source's provider starts on a thread of its own as soon
as its home's fingerprint is taken, so its start-up overlaps the stages' set-up.

The real pinned Codex shows the start, the remembered failure and the stop; the scripted
driver only what no real provider shows on demand (a start held open, an unexpected
exception), hence `fake` in those names.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from lib.drivers.base import AgentDriver, DriverError, DriverUnavailable
from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.pipeline import build
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.records import RecordSink, kind_of
from lib.pipeline.sync import run_sync
from lib.pipeline.unchanged_sources import UnchangedSources
from lib.types import AgentSourceConfig
from lib.workspace import Workspace
from tests.support.cli import CODEX_BIN
from tests.support.codex_home import demo_threads, make_codex_home
from tests.support.scripted_driver import ScriptedDriver


class Factory:
    """Makes real Codex drivers and records each one it made."""

    def __init__(self, home: Path, codex_bin: str = str(CODEX_BIN)) -> None:
        self.config = AgentSourceConfig(id="codex", driver="codex-app-server", codex_home=str(home),
                                        codex_bin=codex_bin)
        self.made: list[CodexAppServerDriver] = []

    def __call__(self, _source_id: str) -> AgentDriver:
        driver = CodexAppServerDriver(self.config)
        self.made.append(driver)
        return driver


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return make_codex_home(tmp_path / "codex-home", demo_threads())


def test_a_driver_started_early_is_the_running_one_get_gives(home):
    factory = Factory(home)
    with DriverPool(factory) as pool:
        pool.start_early(["codex"])
        driver = pool.get("codex")
        assert factory.made == [driver], "made once"
        assert isinstance(driver, CodexAppServerDriver) and driver.transport.running
        assert driver.source.provider_version, "its initialize was answered"
        assert pool.get("codex") is driver
    assert not driver.transport.running, "closing the pool stops it"


def test_a_start_failing_early_is_remembered_like_one_failing_in_get(home, tmp_path):
    factory = Factory(home, codex_bin=str(tmp_path / "no-such-codex"))
    with DriverPool(factory) as pool:
        pool.start_early(["codex"])
        failure = pool.get("codex")
        assert isinstance(failure, DriverUnavailable) and failure.code == "program-not-found"
        assert pool.get("codex") is failure
        assert len(factory.made) == 1, "not retried"


def test_closing_the_pool_stops_a_driver_started_early_and_never_taken(home):
    factory = Factory(home)
    pool = DriverPool(factory)
    pool.start_early(["codex"])
    pool.close()
    (driver,) = factory.made
    assert not driver.transport.running
    assert driver.transport.pid is None, "its child was reaped"


def test_an_unexpected_start_failure_is_raised_by_get_on_the_callers_thread_fake():
    class Broken(ScriptedDriver):
        def start(self, signal=None) -> None:  # noqa: ANN001
            raise RuntimeError("start broke")

    with DriverPool(lambda _source: Broken(source_id="codex")) as pool:
        pool.start_early(["codex"])
        with pytest.raises(RuntimeError, match="start broke"):
            pool.get("codex")


def test_a_driver_that_cannot_be_made_is_remembered_when_started_early_fake():
    made = []

    def factory(source_id: str) -> AgentDriver:
        made.append(source_id)
        raise DriverError("start-failed", "no such driver here")

    with DriverPool(factory) as pool:
        pool.start_early(["codex"])
        failure = pool.get("codex")
        assert isinstance(failure, DriverError) and failure.message == "no such driver here"
        assert pool.get("codex") is failure and made == ["codex"]


def test_a_pool_stopped_while_a_start_runs_stops_that_driver_when_its_start_ends_fake():
    driver = ScriptedDriver(source_id="codex")
    gate = driver.gate("start")
    pool = DriverPool(lambda _source: driver)
    pool.start_early(["codex"])
    gate.wait_reached()
    pool.stop_all()  # a host's stop: it does not wait for the start
    assert ("stop",) not in driver.calls
    gate.open()
    for thread in threading.enumerate():
        if thread.name == "start of source codex":
            thread.join(timeout=60)
    assert driver.calls[-1] == ("stop",) and driver.stopped
    assert isinstance(pool.get("codex"), DriverError), "the pool gives no driver after its stop"


class Records(RecordSink):
    def __init__(self) -> None:
        super().__init__()
        self.items: list = []

    def emit(self, item) -> None:  # noqa: ANN001
        self.items.append(item)


def test_sync_takes_the_fingerprint_then_starts_codex_on_its_own_thread_before_the_stages_are_set_up(
    home, tmp_path, monkeypatch
):
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\n'
                      f'codexBin = "{CODEX_BIN}"\n')
    workspace = Workspace(state_dir=str(tmp_path / "state"), config_path=str(config))
    events: list[tuple[str, str]] = []
    real_check, real_stage = UnchangedSources.check, build.publish_stage

    def check(self, source_id):  # noqa: ANN001, ANN202
        events.append(("fingerprint", threading.current_thread().name))
        return real_check(self, source_id)

    def publish_stage(*args, **kwargs):  # noqa: ANN202
        events.append(("stages", threading.current_thread().name))
        return real_stage(*args, **kwargs)

    class Recorded(CodexAppServerDriver):
        def start(self, signal=None) -> None:  # noqa: ANN001
            events.append(("start", threading.current_thread().name))
            super().start(signal)

    monkeypatch.setattr(UnchangedSources, "check", check)
    monkeypatch.setattr(build, "publish_stage", publish_stage)
    sink = Records()
    with DriverPool(lambda source_id: Recorded(workspace.source_config(source_id))) as drivers:
        run_sync(workspace, ["codex"], sink, drivers=drivers, close_drivers=True, start_early=True)
    workspace.close()

    names = [name for name, _thread in events]
    assert names.index("fingerprint") < names.index("start"), "the home is fingerprinted before Codex starts"
    (start_thread,) = [thread for name, thread in events if name == "start"]
    assert start_thread == "start of source codex"
    assert names.index("start") < names.index("stages"), "Codex starts before the stages are set up"
    (publication,) = [item for item in sink.items if kind_of(item) == "publication"]
    assert publication["sessionCount"] == len(demo_threads())


def test_a_pool_stopped_after_an_early_start_ended_stops_that_driver_though_never_taken(home):
    factory = Factory(home)
    pool = DriverPool(factory)
    pool.start_early(["codex"])
    (driver,) = factory.made
    for thread in threading.enumerate():
        if thread.name == "start of source codex":
            thread.join(timeout=60)
    assert driver.transport.running
    pool.stop_all()
    assert not driver.transport.running
    pool.close()


def test_sync_allocates_the_observation_sequence_then_codex_lists_from_its_start_thread(home, tmp_path, monkeypatch):
    """Session 23: the listed source's sequence is allocated before its provider starts,
    so the first thread/list goes out on the start thread right after `initialize`, while
    the stages are set up; every listing still follows its sequence."""
    from lib.fabric.target import FabricTarget

    config = tmp_path / "config.toml"
    config.write_text(f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\n'
                      f'codexBin = "{CODEX_BIN}"\n')
    workspace = Workspace(state_dir=str(tmp_path / "state"), config_path=str(config))
    events: list[tuple[str, str]] = []
    real_sequence = FabricTarget.begin_session_observation
    sequences: list[int] = []

    def begin_session_observation(self):  # noqa: ANN001, ANN202
        sequences.append(real_sequence(self))
        events.append(("sequence", threading.current_thread().name))
        return sequences[-1]

    class Recorded(CodexAppServerDriver):
        def _ask_page(self, cursor):  # noqa: ANN001, ANN202
            events.append(("list", threading.current_thread().name))
            return super()._ask_page(cursor)

    monkeypatch.setattr(FabricTarget, "begin_session_observation", begin_session_observation)
    sink = Records()
    with DriverPool(lambda source_id: Recorded(workspace.source_config(source_id))) as drivers:
        run_sync(workspace, ["codex"], sink, drivers=drivers, close_drivers=True, start_early=True)
    workspace.close()

    names = [name for name, _thread in events]
    assert names.count("sequence") == 1
    assert names.index("sequence") < names.index("list"), "the sequence comes before the first provider call"
    assert events[names.index("list")][1] == "start of source codex"
    (source,) = [item for item in sink.items if kind_of(item) == "source"]
    assert source["observationSequence"] == sequences[0]
    (publication,) = [item for item in sink.items if kind_of(item) == "publication"]
    assert publication["sessionCount"] == len(demo_threads())
    assert publication["sources"][0]["inventoryComplete"] is True


def test_early_sequences_stop_at_the_first_unchanged_source_so_every_number_is_the_one_it_was():
    from lib.pipeline.sync import early_sequences

    class Target:
        next = 7

        def begin_session_observation(self) -> int:
            self.next += 1
            return self.next

    target = Target()
    assert early_sequences(target, ["a", "b", "c"], ["a", "c"]) == {"a": 8}  # "b" allocates before "c"
    assert early_sequences(target, ["a", "b"], ["a", "b"]) == {"a": 9, "b": 10}
    assert early_sequences(target, ["a", "b"], ["b"]) == {}

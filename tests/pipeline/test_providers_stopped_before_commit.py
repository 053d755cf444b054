"""`agentctl sync` (run_sync with close_drivers) asks its providers to stop once every read
is answered, so Codex's exit (it checkpoints its state database) overlaps the index
commit instead of following it; the homes are still fingerprinted only after the
providers exited (`DriverPool.close_in_background`, then `close` waits for it).

It also hands the heap pages the reads freed back to the system once, after the reads and
before the commit (lib/memory_release.py): the commit's largest allocations fit none of
those freed chunks, so they came on top of them (issue 14 goal 4; the real trim, watched).
And the listed session ids reach the commit as one table (lib/key_table.py), no stage
holding them as strings (issue 14 goal 4: 25,000 id strings, a set and two lists were
held through a first sync's reads and commit).

The real pinned Codex shows the order; the scripted driver only a stop that fails (which
no real provider does on demand), hence `fake` in that name.
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path

import pytest

import lib.memory_release as memory_release
from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.fabric.publication import Publication
from lib.key_table import KeyTable
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.records import RecordSink, kind_of
from lib.pipeline.sync import run_sync
from lib.pipeline.unchanged_sources import UnchangedSources
from lib.workspace import Workspace
from tests.pipeline.test_early_start import Records
from tests.support.cli import CODEX_BIN
from tests.support.codex_home import demo_threads, make_codex_home
from tests.support.scripted_driver import ScriptedDriver

PATIENCE = 60.0  # seconds a loaded machine may take to end a child that was asked to stop


def reaped(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def workspace(tmp_path: Path):
    home = make_codex_home(tmp_path / "codex-home", demo_threads())
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\n'
                      f'codexBin = "{CODEX_BIN}"\n')
    workspace = Workspace(state_dir=str(tmp_path / "state"), config_path=str(config))
    yield workspace
    workspace.close()


def test_sync_stops_codex_during_the_index_commit_and_fingerprints_the_home_after_it_exited(workspace, monkeypatch):
    pids: list[int] = []
    seen: dict[str, bool] = {}
    real_commit, real_published = Publication.commit, UnchangedSources.published

    class Recorded(CodexAppServerDriver):
        def start(self, signal=None) -> None:  # noqa: ANN001
            super().start(signal)
            pids.append(self.transport.pid)

    def commit(self):  # noqa: ANN001, ANN202
        # Codex was asked to stop before the commit began: it exits while the commit runs
        # (waited for here, so the assertion does not depend on how fast it exits)
        deadline = time.monotonic() + PATIENCE
        while not reaped(pids[0]) and time.monotonic() < deadline:
            time.sleep(0.01)
        seen["exited during the commit"] = reaped(pids[0])
        return real_commit(self)

    def published(self, publication):  # noqa: ANN001, ANN202
        seen["exited before the fingerprint"] = reaped(pids[0])
        return real_published(self, publication)

    monkeypatch.setattr(Publication, "commit", commit)
    monkeypatch.setattr(UnchangedSources, "published", published)
    sink = Records()
    with DriverPool(lambda source_id: Recorded(workspace.source_config(source_id))) as drivers:
        run_sync(workspace, ["codex"], sink, drivers=drivers, close_drivers=True, start_early=True)

    assert len(pids) == 1
    assert seen == {"exited during the commit": True, "exited before the fingerprint": True}
    (publication,) = [item for item in sink.items if kind_of(item) == "publication"]
    assert publication["sessionCount"] == len(demo_threads())


def test_sync_without_close_drivers_keeps_codex_running_through_the_commit(workspace, monkeypatch):
    """A host keeps its providers between cycles: nothing stops them after the reads."""
    running: list[bool] = []
    real_commit = Publication.commit
    made: list[CodexAppServerDriver] = []

    def factory(source_id: str) -> CodexAppServerDriver:
        made.append(CodexAppServerDriver(workspace.source_config(source_id)))
        return made[-1]

    def commit(self):  # noqa: ANN001, ANN202
        running.append(made[0].transport.running)
        return real_commit(self)

    monkeypatch.setattr(Publication, "commit", commit)
    with DriverPool(factory) as drivers:
        run_sync(workspace, ["codex"], Records(), drivers=drivers)
        assert running == [True]
        assert made[0].transport.running, "still running after the sync"


def test_sync_releases_freed_memory_after_the_reads_and_again_inside_the_commit(workspace, monkeypatch):
    """Once before the commit (what the reads freed), once in it before the final
    transaction (the rows' freed objects, before the roots' large texts)."""
    events: list[str] = []
    real_commit = Publication.commit
    real_add = Publication.add_prepared
    trim = memory_release._malloc_trim()

    def watched_trim(pad: int) -> int:
        events.append("release")
        return trim(pad) if trim is not None else 0

    def add_prepared(self, prepared):  # noqa: ANN001, ANN202
        if events[-1:] != ["read"]:
            events.append("read")
        return real_add(self, prepared)

    def commit(self):  # noqa: ANN001, ANN202
        events.append("commit")
        return real_commit(self)

    monkeypatch.setattr(memory_release, "_trim", watched_trim)
    monkeypatch.setattr(Publication, "add_prepared", add_prepared)
    monkeypatch.setattr(Publication, "commit", commit)
    sink = Records()
    with DriverPool(lambda source_id: CodexAppServerDriver(workspace.source_config(source_id))) as drivers:
        run_sync(workspace, ["codex"], sink, drivers=drivers, close_drivers=True)
    assert events == ["read", "release", "commit", "release"]
    (publication,) = [item for item in sink.items if kind_of(item) == "publication"]
    assert publication["sessionCount"] == len(demo_threads())


def test_a_stop_failing_in_the_background_is_raised_by_close_fake():
    class Broken(ScriptedDriver):
        def stop(self) -> None:
            raise RuntimeError("stop broke")

    pool = DriverPool(lambda _source: Broken(source_id="codex"))
    pool.get("codex")
    pool.close_in_background()
    with pytest.raises(RuntimeError, match="stop broke"):
        pool.close()


class Dropped(RecordSink):
    """Records printed and dropped, as `agentctl sync` does; only the publication's kept."""

    def __init__(self) -> None:
        super().__init__()
        self.publication: dict | None = None

    def emit(self, item) -> None:  # noqa: ANN001
        if kind_of(item) == "publication":
            self.publication = item


def test_the_listed_ids_reach_the_commit_as_one_table_and_no_stage_holds_them(workspace, monkeypatch):
    """The list stage's stream keeps them as one table while it lists, the read stage
    passes them on with its outcome record and keeps none, `run_stage` drops its last
    records before the commit, and the publication keeps the verdict's as a KeyTable."""
    ids = {thread.id for thread in demo_threads()}
    seen: dict[str, object] = {}
    real_commit = Publication.commit

    def commit(self):  # noqa: ANN001, ANN202
        (verdict,) = self._verdicts.values()
        listed = verdict.outcome["listedSessionIds"]
        seen["table"] = type(listed) is KeyTable and set(listed) == ids and len(listed) == len(ids)
        gc.collect()
        seen["lists"] = sum(1 for o in gc.get_objects() if type(o) is list and len(o) == len(ids)
                            and all(type(i) is str for i in o) and set(o) == ids)
        seen["sets"] = sum(1 for o in gc.get_objects() if type(o) is set and o is not ids and o == ids)
        return real_commit(self)

    monkeypatch.setattr(Publication, "commit", commit)
    sink = Dropped()
    with DriverPool(lambda source_id: CodexAppServerDriver(workspace.source_config(source_id))) as drivers:
        run_sync(workspace, ["codex"], sink, drivers=drivers, close_drivers=True)
    assert seen == {"table": True, "lists": 0, "sets": 0}
    assert sink.publication is not None and sink.publication["sessionCount"] == len(ids)

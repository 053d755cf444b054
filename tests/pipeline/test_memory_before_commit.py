"""`agentctl sync` hands the heap pages its reads freed back to the system once every read
is answered, before the index commit (lib/memory_release.py): the commit's largest
allocations (the roots' texts, their stored forms) fit none of those freed chunks, so
they came on top of them (issue 14 goal 4). The real pinned Codex and store; the real
trim is called, only watched."""

from __future__ import annotations

from pathlib import Path

import pytest

import lib.memory_release as memory_release
from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.fabric.publication import Publication
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.records import kind_of
from lib.pipeline.sync import run_sync
from lib.workspace import Workspace
from tests.pipeline.test_early_start import Records
from tests.support.cli import CODEX_BIN
from tests.support.codex_home import demo_threads, make_codex_home


@pytest.fixture
def workspace(tmp_path: Path):
    home = make_codex_home(tmp_path / "codex-home", demo_threads())
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\n'
                      f'codexBin = "{CODEX_BIN}"\n')
    workspace = Workspace(state_dir=str(tmp_path / "state"), config_path=str(config))
    yield workspace
    workspace.close()


def test_sync_releases_the_reads_freed_memory_once_after_the_reads_and_before_the_commit(workspace, monkeypatch):
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
    assert events == ["read", "release", "commit"]
    (publication,) = [item for item in sink.items if kind_of(item) == "publication"]
    assert publication["sessionCount"] == len(demo_threads())

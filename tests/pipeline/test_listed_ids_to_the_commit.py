"""A sync's listed session ids reach the commit as one table (lib/key_table.py), not a
string an id held by a stage: the list stage's stream keeps them as one table while it
lists, the read stage passes them on with its outcome record and keeps none, and the
publication keeps the verdict's as a KeyTable (issue 14 goal 4: 25,000 id strings, a
set and two lists were held through a first sync's reads and commit). The real Codex."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.fabric.publication import Publication
from lib.key_table import KeyTable
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.records import RecordSink, kind_of
from lib.pipeline.sync import run_sync
from lib.workspace import Workspace
from tests.support.cli import CODEX_BIN
from tests.support.codex_home import demo_threads, make_codex_home


class Dropped(RecordSink):
    """Records printed and dropped, as `agentctl sync` does; only the publication's kept."""

    def __init__(self) -> None:
        super().__init__()
        self.publication: dict | None = None

    def emit(self, item) -> None:  # noqa: ANN001
        if kind_of(item) == "publication":
            self.publication = item


@pytest.fixture
def workspace(tmp_path: Path):
    home = make_codex_home(tmp_path / "codex-home", demo_threads())
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\n'
                      f'codexBin = "{CODEX_BIN}"\n')
    workspace = Workspace(state_dir=str(tmp_path / "state"), config_path=str(config))
    yield workspace
    workspace.close()


def test_the_listed_ids_reach_the_commit_as_one_table_and_no_stage_holds_them(workspace, monkeypatch):
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

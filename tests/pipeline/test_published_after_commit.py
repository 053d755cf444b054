"""`published` records wait for the index commit: when the commit fails, the stage has
announced no session as published (none was: the index never reached it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.fabric.publish_lock import PUBLISH_LOCK, PublishLockHeld
from lib.pipeline.build import publish_stage
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.listing import list_source
from lib.pipeline.records import RecordSink
from lib.pipeline.runner import run_stage
from lib.workspace import Workspace
from tests.fabric.holders import hold_lock
from tests.fabric.target_helpers import snapshot
from tests.support.scripted_driver import ScriptedDriver


class Kinds(RecordSink):
    def __init__(self) -> None:
        super().__init__()
        self.kinds: list[str] = []

    def emit(self, item) -> None:  # noqa: ANN001
        self.kinds.append(item["record"] if isinstance(item, dict) else type(item).__name__)


def test_a_publication_whose_commit_fails_prints_no_published_record(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[sources.codex]\ndriver = "codex-app-server"\n')
    workspace = Workspace(state_dir=str(tmp_path / "state"), config_path=str(config), lock_timeout=0)
    target = workspace.open_target()
    driver = ScriptedDriver(source_id="codex", kind="codex-app-server", snapshots=[snapshot("s1"), snapshot("s2")])
    driver.start()
    holders = []

    def inventory():
        yield from list_source(driver, target.begin_session_observation(), target.observation_origin())
        # another process takes the publish lock once the sessions are in: the commit fails
        holders.append(hold_lock(workspace.resolved_store_url, target.space, PUBLISH_LOCK))

    sink = Kinds()
    with DriverPool(lambda _source: driver) as drivers, pytest.raises(PublishLockHeld):
        run_stage(publish_stage(workspace, drivers), inventory(), sink)
    holders[0].release()
    workspace.close()

    assert "published" not in sink.kinds
    assert "publication" not in sink.kinds

"""Every path that publishes a session enriches it with its Git context in one place
before hashing, so the same snapshot has one hash: the read stage (`read`, `sync`),
`publish_collected` (the spec's `publish()`) and `refresh_session`. Before, the library
paths hashed it without Git context, and an unchanged session in a checkout was
written again on every other run."""

from __future__ import annotations

from pathlib import Path

from lib.git_context import GitContextResolver
from lib.pipeline.collected import publish_collected
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.prepare_stage import PrepareStage
from lib.pipeline.read_stage import ReadStage
from lib.pipeline.refresh import refresh_session
from lib.prepare import PreparedSession
from lib.reconcile import collect_source
from tests.fabric.target_helpers import make_env, rows, snapshot
from tests.support.git_repos import GitRepos
from tests.support.scripted_driver import ScriptedDriver


def test_an_unchanged_session_in_a_checkout_hashes_alike_on_every_path(tmp_path: Path) -> None:
    repos = GitRepos(tmp_path / "git")
    repo = repos.init("project", branch="main")
    env = make_env(tmp_path, GitContextResolver(repos.runner()))
    target = env.target()
    driver = ScriptedDriver(source_id="codex", kind="codex-app-server",
                            snapshots=[snapshot("s1", cwd=str(repo))])

    assert publish_collected(target, [collect_source(driver)]) == 1
    published = rows(target)["codex/s1"]
    assert published["gitBranch"] == "main" and published["gitWorktreeRoot"] == str(repo)

    assert refresh_session(target, driver, "s1").action == "unchanged"

    with DriverPool(lambda _source: driver) as drivers:
        stage = PrepareStage(ReadStage(drivers, target.resolver.begin_observation()))
        summary = {"record": "summary", "sourceId": "codex", "summary": {"nativeSessionId": "s1"}}
        [read] = [item for item in stage.handle(summary) if isinstance(item, PreparedSession)]
    assert read.snapshot_hash == published["snapshotHash"]

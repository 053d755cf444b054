"""Observation ordering: an observation that began earlier never undoes a newer one."""

from __future__ import annotations

from pathlib import Path

from lib.drivers.base import DriverError
from lib.fabric.store import open_store
from lib.pipeline.refresh import refresh_session
from tests.fabric.target_helpers import (
    Env,
    descriptor,
    hydrate,
    make_env,
    publish,
    rows,
    snapshot,
)
from tests.support.scripted_driver import ScriptedDriver


def _driver(*snaps, **options) -> ScriptedDriver:
    return ScriptedDriver(source_id="codex", kind="codex-app-server", snapshots=snaps, **options)


def _messages(env: Env, key: str) -> int:
    target = env.target()
    return len(hydrate(target, rows(target)[key]["manifest"].id)["normalized"]["messages"])


def test_an_older_collection_never_overwrites_a_newer_refresh(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot("s1", messages=1)])
    older = target.begin_session_observation()  # a full collection starts, reads 2 messages
    stale_read = snapshot("s1", messages=2)

    refreshed = refresh_session(target, _driver(snapshot("s1", messages=3)), "s1")
    assert refreshed.action == "written"

    summary, results = publish(target, descriptor(), [stale_read], sequence=older)

    assert results[0].action == "skipped-newer"
    assert summary.statuses["codex/s1"] == "complete"
    assert _messages(env, "codex/s1") == 3


def test_an_older_complete_inventory_never_deletes_a_session_a_newer_refresh_published(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot("s1")])
    older = target.begin_session_observation()  # lists only s1
    refresh_session(target, _driver(snapshot("started-later")), "started-later")

    summary, _ = publish(target, descriptor(), [snapshot("s1")], sequence=older)

    assert summary.statuses == {"codex/s1": "complete", "codex/started-later": "complete"}


def test_an_older_complete_inventory_never_restores_a_session_a_newer_complete_inventory_dropped(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot("s1"), snapshot("s2")])
    older = target.begin_session_observation()  # sees s1, s2 and a brand-new s3
    newer = target.begin_session_observation()  # s2 and s3 are gone by now
    publish(target, descriptor(), [snapshot("s1")], sequence=newer)
    assert rows(target)["codex/s2"]["status"] == "deleted"

    summary, results = publish(
        target, descriptor(), [snapshot("s1"), snapshot("s2"), snapshot("s3")], sequence=older
    )

    assert [r.action for r in results] == ["skipped-newer"] * 3
    assert summary.statuses == {"codex/s1": "complete", "codex/s2": "deleted"}
    assert "codex/s3" not in rows(target)


def test_ordering_is_kept_in_the_store_so_separate_processes_respect_it(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    publish(env.target(), descriptor(), [snapshot("s1", messages=1)])
    older = env.target().begin_session_observation()
    refresh_session(env.target(), _driver(snapshot("s1", messages=3)), "s1")

    # another process: its own store connection and target object
    other = Env(env.tmp, open_store(env.store_url), env.store_url, env.owner, env.clock, env.resolver)
    _, results = publish(other.target(), descriptor(), [snapshot("s1", messages=2)], sequence=older)

    assert results[0].action == "skipped-newer"
    assert _messages(env, "codex/s1") == 3


def test_a_refresh_publishes_one_session_and_leaves_every_other_status_alone(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor("claude", "claude-agent-sdk"), [snapshot("c1")])
    publish(target, descriptor(), [snapshot("s1"), snapshot("s2", complete=False)])  # c1 untouched

    refresh_session(target, _driver(snapshot("s1", messages=5)), "s1")

    statuses = {k: r["status"] for k, r in rows(target).items()}
    assert statuses == {"claude/c1": "complete", "codex/s1": "complete", "codex/s2": "partial"}
    assert _messages(env, "codex/s1") == 5


def test_a_refresh_whose_read_fails_marks_the_published_row_partial(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot("s1")])
    failing = _driver(read_faults={"s1": DriverError("session-not-found", "no session s1")})

    result = refresh_session(target, failing, "s1")

    assert (result.action, result.status) == ("failed", "partial")
    assert rows(target)["codex/s1"]["status"] == "partial"


def test_an_older_incomplete_collection_leaves_a_newer_refresh_complete_and_its_source_row_newer(
    tmp_path: Path,
) -> None:
    """An incomplete inventory turns untouched rows stale, but not one a newer refresh
    published; and the older run's source row never replaces the refresh's."""
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot("s1"), snapshot("s2")])
    older = target.begin_session_observation()  # a full collection starts with old capabilities
    driver = _driver(snapshot("s1", messages=3))
    driver.source = descriptor(prompt=True)  # the refresh's driver knows more now
    refresh_session(target, driver, "s1")

    summary, _ = publish(target, descriptor(), [], listed=[], sequence=older, inventory_complete=False)

    assert summary.statuses == {"codex/s1": "complete", "codex/s2": "stale"}
    [source_row] = [r for r in summary.sources if r["sourceId"] == "codex"]
    assert source_row["capabilities"]["prompt"] is True
    assert rows(target)["codex/s1"]["capabilities"]["prompt"] is True

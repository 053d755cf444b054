"""Synchronization statuses: complete, partial, stale, deleted, retained, preserved."""

from __future__ import annotations

from pathlib import Path

from lib.git_context import GitContextResolver
from tests.fabric.target_helpers import (
    descriptor,
    index,
    make_env,
    outcome,
    publish,
    rows,
    snapshot,
)
from tests.support.git_repos import GitRepos


def test_a_complete_read_is_complete_and_a_snapshot_reporting_itself_incomplete_is_partial(
    tmp_path: Path,
) -> None:
    target = make_env(tmp_path).target()
    summary, _ = publish(target, descriptor(), [snapshot("s1"), snapshot("s2", complete=False)])
    assert summary.statuses == {"codex/s1": "complete", "codex/s2": "partial"}
    assert {k: r["status"] for k, r in rows(target).items()} == summary.statuses


def test_a_failed_read_keeps_the_prior_row_and_graph_marked_partial(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("s1", messages=3)])
    prior = rows(target)["codex/s1"]

    summary, results = publish(target, descriptor(), [], read_errors=["s1", "never-published"])

    row = rows(target)["codex/s1"]
    assert [r.action for r in results] == ["failed", "failed"]
    assert row["status"] == "partial"
    assert row["manifest"] == prior["manifest"]
    assert row["recentMessages"] == prior["recentMessages"]
    assert "codex/never-published" not in rows(target)  # no prior row: none is made
    source = index(target)["sources"][0]
    assert source["errorCount"] == 2
    assert source["complete"] is False
    assert source["inventoryComplete"] is True


def test_an_incomplete_inventory_keeps_prior_sessions_and_untouched_ones_turn_stale(
    tmp_path: Path,
) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("s1"), snapshot("s2")])

    summary, _ = publish(target, descriptor(), [snapshot("s1")], inventory_complete=False)

    assert summary.statuses == {"codex/s1": "complete", "codex/s2": "stale"}
    assert summary.session_count == 2
    assert index(target)["sources"][0]["inventoryComplete"] is False


def test_sessions_of_a_source_absent_from_a_publication_keep_their_status(tmp_path: Path) -> None:
    """Only an inventory verdict of their own source changes untouched rows: publishing
    codex leaves claude's sessions as they were (they are not stale: nothing looked)."""
    target = make_env(tmp_path).target()
    publish(target, descriptor("claude", "claude-agent-sdk"), [snapshot("c1"), snapshot("c2", complete=False)])
    summary, _ = publish(target, descriptor("codex"), [snapshot("x1")], inventory_complete=False)
    assert summary.statuses == {"claude/c1": "complete", "claude/c2": "partial", "codex/x1": "complete"}
    assert summary.status_changes == []
    assert {r["sourceId"] for r in index(target)["sources"]} == {"claude", "codex"}


def test_an_incomplete_inventory_turns_its_own_untouched_sessions_stale_unless_statuses_are_preserved(
    tmp_path: Path,
) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor("codex"), [snapshot("x1"), snapshot("x2"), snapshot("x3", complete=False)])

    summary, _ = publish(
        target, descriptor("codex"), [snapshot("x1", messages=5)], inventory_complete=False, preserve=True
    )
    assert summary.statuses == {"codex/x1": "complete", "codex/x2": "complete", "codex/x3": "partial"}

    summary, _ = publish(target, descriptor("codex"), [snapshot("x1", messages=6)], inventory_complete=False)
    assert summary.statuses == {"codex/x1": "complete", "codex/x2": "stale", "codex/x3": "stale"}
    assert [(c.key, c.action, c.status) for c in summary.status_changes] == [
        ("codex/x2", "stale", "stale"), ("codex/x3", "stale", "stale"),
    ]


def test_a_complete_inventory_marks_unlisted_sessions_deleted_and_keeps_them_only_in_the_complete_index(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot("s1"), snapshot("s2")])
    env.clock.advance(hours=1)

    summary, _ = publish(target, descriptor(), [snapshot("s1")])

    deleted = rows(target)["codex/s2"]
    assert deleted["status"] == "deleted"
    assert deleted["deletedAt"] == "2026-07-01T13:00:00.000Z"
    assert "codex/s2" not in rows(target, "recent")
    complete = index(target)
    assert complete["sessionCount"] == 1 == summary.session_count
    assert index(target, "recent")["sessionCount"] == 1

    env.clock.advance(hours=1)
    publish(target, descriptor(), [snapshot("s1")])
    assert rows(target)["codex/s2"]["deletedAt"] == "2026-07-01T13:00:00.000Z"  # kept, not renewed

    publish(target, descriptor(), [snapshot("s1"), snapshot("s2")])
    revived = rows(target)["codex/s2"]
    assert revived["status"] == "complete"
    assert "deletedAt" not in revived


def test_a_retained_session_with_a_complete_copy_stays_complete_keeps_its_graph_and_previews_and_takes_current_git_and_capabilities(
    tmp_path: Path,
) -> None:
    repos = GitRepos(tmp_path / "git")
    repo = repos.init("project", branch="main")
    env = make_env(tmp_path, GitContextResolver(repos.runner()))
    target = env.target()
    snap = snapshot("s1", messages=4, cwd=str(repo))
    publish(target, descriptor(), [snap])
    prior = rows(target)["codex/s1"]
    assert prior["gitBranch"] == "main"
    repos.git(repo, "checkout", "--quiet", "-b", "feature")

    summary, results = publish(target, descriptor(prompt=True), [], retained=[snap.summary])

    row = rows(target)["codex/s1"]
    assert [r.action for r in results] == ["retained"]
    assert row["status"] == "complete"
    assert row["manifest"] == prior["manifest"]
    assert row["recentMessages"] == prior["recentMessages"]
    assert row["gitBranch"] == "feature"
    assert row["capabilities"]["prompt"] is True
    assert index(target)["sources"][0]["inventoryComplete"] is True


def test_a_retained_session_without_a_complete_published_copy_is_an_error_that_keeps_unlisted_sessions(
    tmp_path: Path,
) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("old"), snapshot("half", complete=False)])

    # the inventory lists two retained sessions and not `old`: one retention has no
    # published copy at all, the other only a partial one
    summary, results = publish(
        target, descriptor(), [], retained=[snapshot("new").summary, snapshot("half").summary]
    )

    assert [r.action for r in results] == ["retained-unbacked", "retained-unbacked"]
    source = index(target)["sources"][0]
    assert source["inventoryComplete"] is False
    assert {e["code"] for e in source["errors"]} == {"retained-without-published-copy"}
    assert {e["nativeSessionId"] for e in source["errors"]} == {"new", "half"}
    assert summary.statuses == {"codex/half": "partial", "codex/old": "stale"}  # not deleted


def test_a_source_that_failed_to_start_is_an_error_and_an_incomplete_inventory(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("s1")])
    with target.publication() as pub:
        pub.source_failed(descriptor(), "driver-unavailable", "codex is not installed")
        summary = pub.commit()
    assert summary.statuses == {"codex/s1": "stale"}
    source = index(target)["sources"][0]
    assert source["inventoryComplete"] is False
    assert source["errors"][0]["code"] == "driver-unavailable"
    assert source["errors"][0]["stage"] == "start"


def test_list_errors_from_the_outcome_are_recorded_on_the_source_row(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    with target.publication() as pub:
        pub.begin_source(descriptor(), None)
        errors = [{"stage": "list", "code": f"e{i}", "message": "m", "nativeSessionId": None} for i in range(25)]
        pub.end_source(outcome("codex", [], inventory_complete=False, errors=errors))
        pub.commit()
    source = index(target)["sources"][0]
    assert source["errorCount"] == 25
    assert len(source["errors"]) == 20


def test_the_deletion_guard_suspects_an_inventory_that_loses_everything_or_most_of_many() -> None:
    from lib.fabric.publication_resolve import DeletionGuard

    guard = DeletionGuard()
    assert guard.suspect(deleting=1, live=1)  # every session gone
    assert guard.suspect(deleting=6, live=10)  # most of many
    assert not guard.suspect(deleting=4, live=5)  # most of few: a user deleting threads
    assert not guard.suspect(deleting=5, live=10)  # not more than half
    assert not guard.suspect(deleting=0, live=0)
    assert not DeletionGuard(accept=True).suspect(deleting=10, live=10)


def test_a_suspect_inventory_deletes_nothing_and_says_so(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot(f"s{i}") for i in range(6)])
    summary, _ = publish(target, descriptor(), [snapshot("s0")])  # five of six gone at once
    assert set(summary.statuses.values()) == {"complete", "stale"}
    assert "no longer lists 5 of its 6" in summary.suspect_sources["codex"]
    [source] = summary.sources
    assert source["inventoryComplete"] is False

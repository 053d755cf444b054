"""Index contents: the recent window, counts, previews, generations and checkout rows."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from lib.fabric.graph_plan import plan_graph
from lib.fabric.graph_read import read_graph_value
from lib.git_context import GitContextResolver
from tests.fabric.target_helpers import (
    SPACE,
    START,
    descriptor,
    index,
    make_env,
    publish,
    rows,
    snapshot,
)
from tests.support.git_repos import GitRepos


def test_the_recent_index_holds_live_sessions_updated_within_seven_days_and_the_complete_index_all(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    target = env.target()
    snaps = [
        snapshot("today", updated_at=START),
        snapshot("six-days", updated_at=START - timedelta(days=6, hours=23)),
        snapshot("eight-days", updated_at=START - timedelta(days=8)),
        snapshot("undated", updated_at=None),
    ]
    publish(target, descriptor(), snaps)

    recent, complete = index(target, "recent"), index(target)
    assert [r["nativeSessionId"] for r in recent["sessions"]] == ["today", "six-days"]
    assert [r["nativeSessionId"] for r in complete["sessions"]] == [
        "today", "six-days", "eight-days", "undated"
    ]
    for value in (recent, complete):
        assert value["sessionCount"] == 4
        assert value["olderSessionCount"] == 2
    assert recent["bucket"] == "recent" and complete["bucket"] == "all"

    env.clock.advance(days=1)
    publish(target, descriptor(), snaps)  # nothing changed but time
    assert [r["nativeSessionId"] for r in index(target, "recent")["sessions"]] == ["today"]


def test_each_publication_raises_the_generation_of_both_indexes(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    for expected in (1, 2, 3):
        summary, _ = publish(target, descriptor(), [snapshot("s1")])
        assert summary.generation == expected
        assert index(target)["generation"] == index(target, "recent")["generation"] == expected


def test_a_row_keeps_at_most_twelve_message_previews_the_latest_ones(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("long", messages=30), snapshot("short", messages=3)])
    long_row, short_row = rows(target)["codex/long"], rows(target)["codex/short"]
    assert [m["id"] for m in long_row["recentMessages"]] == [f"long-e{i}" for i in range(18, 30)]
    assert len(short_row["recentMessages"]) == 3
    assert rows(target, "recent")["codex/long"]["recentMessages"] == long_row["recentMessages"]


def test_published_sessions_lists_status_lifecycle_and_driver_by_key(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("s1", started_as="desktop:abc"), snapshot("s2", complete=False)])
    published = target.published_sessions()
    assert set(published) == {"codex/s1", "codex/s2"}
    assert published["codex/s1"].status == "complete"
    assert published["codex/s1"].started_as == "desktop:abc"
    assert published["codex/s1"].driver == "codex-app-server"
    assert published["codex/s2"].status == "partial"


def test_a_desktop_pairing_survives_later_reads_that_do_not_report_it(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("s1", started_as="desktop:abc")])
    # another process (no memory of the start) reads the session again, now grown
    publish(target, descriptor(), [snapshot("s1", messages=5)])
    assert target.published_sessions()["codex/s1"].started_as == "desktop:abc"
    assert rows(target)["codex/s1"]["startedAs"] == "desktop:abc"


def test_sessions_in_one_worktree_share_one_checkout_row_and_deleted_sessions_drop_theirs(
    tmp_path: Path,
) -> None:
    repos = GitRepos(tmp_path / "git")
    one = repos.init("one", branch="main")
    (one / "sub").mkdir()
    repos.git(one, "remote", "add", "origin", "https://user:secret@example.com/acme/one.git")
    two = repos.init("two", branch="trunk")
    target = make_env(tmp_path, GitContextResolver(repos.runner())).target()
    snaps = [
        snapshot("a", cwd=str(one)),
        snapshot("b", cwd=str(one / "sub")),
        snapshot("c", cwd=str(two)),
        snapshot("d", cwd=str(tmp_path)),  # not a repository
    ]
    publish(target, descriptor(), snaps)

    checkouts = index(target)["checkouts"]
    assert [c["root"] for c in checkouts] == sorted([str(one.resolve()), str(two.resolve())])
    first = checkouts[[c["root"] for c in checkouts].index(str(one.resolve()))]
    assert first["branch"] == "main"
    assert first["commit"] == repos.head(one)
    assert first["repo"] == "https://example.com/acme/one.git"
    assert first["remotes"][0]["url"] == "https://example.com/acme/one.git"
    assert first["origins"] == ["sessions"]
    assert rows(target)["codex/b"]["gitWorktreeRoot"] == str(one.resolve())
    assert index(target, "recent")["checkouts"] == checkouts

    publish(target, descriptor(), snaps[:2])  # c is deleted
    assert [c["root"] for c in index(target)["checkouts"]] == [str(one.resolve())]


def test_discovered_checkouts_are_kept_when_a_publication_omits_directories_and_replaced_by_a_scan(
    tmp_path: Path,
) -> None:
    repos = GitRepos(tmp_path / "git")
    used = repos.init("used")
    found = repos.init("found")
    target = make_env(tmp_path, GitContextResolver(repos.runner())).target()
    sessions = [snapshot("a", cwd=str(used))]

    publish(target, descriptor(), sessions, checkout_directories=[str(found), str(used)])
    origins = {c["root"]: c["origins"] for c in index(target)["checkouts"]}
    assert origins == {
        str(found.resolve()): ["discovery"],
        str(used.resolve()): ["discovery", "sessions"],
    }

    publish(target, descriptor(), sessions, checkout_directories=None)  # e.g. a refresh
    assert {c["root"]: c["origins"] for c in index(target)["checkouts"]} == origins

    publish(target, descriptor(), sessions, checkout_directories=[])  # a complete, empty scan
    assert {c["root"]: c["origins"] for c in index(target)["checkouts"]} == {
        str(used.resolve()): ["sessions"]
    }


def test_an_index_that_links_kept_rows_is_exactly_the_graph_a_full_plan_gives(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    snaps = [snapshot(f"s{i}", messages=3) for i in range(4)]
    publish(target, descriptor(), snaps)
    env.clock.advance(minutes=1)
    publish(target, descriptor(), [snaps[0], snapshot("s1", messages=5), *snaps[2:]])  # s1 changes

    for root in (target.all_index_id(), target.recent_index_id()):
        stored = env.store.read(SPACE, root)
        hydrated = read_graph_value(env.store, SPACE, root, preserve_link_fields={"manifest"})
        full = plan_graph(root_cause(target, root), hydrated, index_scope(target))
        assert full.root.id == root
        assert full.root.value == stored.value
        for child in full.children:
            assert env.store.read(SPACE, child.id).value == child.value


def root_cause(target, root: str) -> dict:
    from lib.fabric.cell_id import all_session_index_cause, recent_session_index_cause

    if root == target.all_index_id():
        return all_session_index_cause(target.space, target.owner)
    return recent_session_index_cause(target.space, target.owner)


def index_scope(target) -> dict:
    from lib.fabric.schemas import SESSION_INDEX_ARRAY_SCOPE, scope

    return scope(target.space, target.owner, SESSION_INDEX_ARRAY_SCOPE)

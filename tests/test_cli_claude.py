"""`agentctl list claude`, `read` and `sync` as real processes over the real Claude Agent
SDK, reading a fixture `CLAUDE_CONFIG_DIR` (tests/support/claude_home.py)."""

from __future__ import annotations

import os

import pytest

from tests.support.claude_home import make_claude_world
from tests.support.cli import agentctl_env, pipeline, run

CLOCK = "2026-03-05T09:00:00.000Z"


def write_config(path, world, *, cwd=None):
    text = f'[sources.claude]\ndriver = "claude-agent-sdk"\nconfigDir = "{world.config_dir}"\n'
    if cwd is not None:
        text += f'cwd = "{cwd}"\n'
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_claude_world(tmp_path_factory.mktemp("claude-cli"))


@pytest.fixture
def env(world, tmp_path):
    config = write_config(tmp_path / "config.toml", world)

    def make(store: str = "fabric.sqlite3", **extra: str) -> dict[str, str]:
        return agentctl_env(tmp_path / "state", config, AGENTCTL_STORE=f"sqlite:///{tmp_path / store}",
                            AGENTCTL_CLOCK=CLOCK, **extra)

    return make


def test_list_claude_writes_the_source_every_summary_and_the_outcome(world, env):
    result = run(["list", "claude"], env())
    assert result.returncode == 0, result.stderr
    kinds = [r["record"] for r in result.records]
    assert kinds[0] == "source" and kinds[-1] == "outcome" and set(kinds[1:-1]) == {"summary"}
    source = result.records[0]["source"]
    assert source["id"] == "claude" and source["driver"] == "claude-agent-sdk"
    assert source["providerVersion"] == "2.1.332"
    assert source["capabilities"]["listSessions"] and source["capabilities"]["readSession"]
    assert source["capabilities"]["prompt"] and source["capabilities"]["startSession"] is True
    summaries = {r["summary"]["nativeSessionId"]: r["summary"] for r in result.of("summary")}
    assert set(summaries) == world.every_id()
    titled = summaries[world.by_name()["app-titled"].id]
    assert titled["title"] == "Invoice rounding" and titled["cwd"] == str(world.app)
    assert titled["createdAt"] == "2026-03-02T09:00:00.000Z" and titled["active"] is None
    outcome = result.of("outcome")[0]
    assert outcome["inventoryComplete"] is True and outcome["listed"] == len(summaries)


def test_a_source_with_cwd_lists_its_project_and_worktree_only(world, env, tmp_path):
    write_config(tmp_path / "config.toml", world, cwd=world.app)
    result = run(["list", "claude"], env())
    assert result.returncode == 0, result.stderr
    assert {r["summary"]["nativeSessionId"] for r in result.of("summary")} == world.ids_in(world.app, world.feature)


def test_read_by_id_writes_a_snapshot_with_the_sdk_messages(world, env):
    session = world.by_name()["notes-tools"]
    result = run(["read", "--source", "claude", session.id], env())
    assert result.returncode == 0, result.stderr
    (snapshot,) = result.of("snapshot")
    assert snapshot["driver"] == "claude-agent-sdk"
    body = snapshot["snapshot"]
    assert body["summary"]["nativeSessionId"] == session.id
    assert [e["uuid"] for e in body["events"]] == session.message_ids()
    assert [m["role"] for m in body["normalizedMessages"]] == ["user", "assistant", "tool", "assistant"]


def test_list_read_pipe_reads_every_session_and_the_unreadable_one_is_an_error(world, env):
    *_, last = pipeline([["list", "claude"], ["read"]], env())
    assert last.returncode == 3  # partial: one session could not be read
    read = {r["snapshot"]["summary"]["nativeSessionId"] for r in last.of("snapshot")}
    assert read == world.every_id() - {world.unreadable.id}
    (error,) = last.of("error")
    assert error["nativeSessionId"] == world.unreadable.id and error["stage"] == "read"
    assert "UnicodeDecodeError" in error["message"] and "broken file" not in error["message"]
    assert "Traceback" not in last.stderr


def test_the_sdks_own_words_about_a_failed_read_show_with_verbose_only(world, env):
    plain = run(["read", "--source", "claude", world.unreadable.id], env())
    verbose = run(["-v", "read", "--source", "claude", world.unreadable.id], env())
    assert plain.returncode == verbose.returncode == 3
    assert "codec can't decode" not in plain.stderr + plain.stdout
    assert "codec can't decode" in verbose.stderr and "codec can't decode" not in verbose.stdout


def test_sync_publishes_every_readable_session_with_its_git_context(world, env):
    result = run(["sync", "claude"], env())
    assert result.returncode == 3, result.stderr  # the unreadable session
    rows = {r["nativeSessionId"]: r for r in run(["sessions"], env()).of("session")}
    # a session never published whose read fails has no row yet (a published one turns partial)
    assert set(rows) == world.every_id() - {world.unreadable.id}
    assert {r["status"] for r in rows.values()} == {"complete"}
    (publication,) = result.of("publication")
    (source,) = publication["sources"]
    assert source["inventoryComplete"] is True and source["complete"] is False
    feature = rows[world.by_name()["feature"].id]
    assert feature["key"] == f"claude/{world.by_name()['feature'].id}"
    assert feature["gitBranch"] == "feature"
    assert os.path.realpath(feature["gitWorktreeRoot"]) == str(world.feature)


def test_sync_of_a_clean_config_dir_is_complete(tmp_path):
    world = make_claude_world(tmp_path / "clean", unreadable=False)
    config = write_config(tmp_path / "config.toml", world)
    env = agentctl_env(tmp_path / "state", config, AGENTCTL_STORE=f"sqlite:///{tmp_path / 'f.sqlite3'}",
                       AGENTCTL_CLOCK=CLOCK)
    result = run(["sync", "claude"], env)
    assert result.returncode == 0, result.stderr
    (publication,) = result.of("publication")
    (source,) = publication["sources"]
    assert source["sourceId"] == "claude" and source["complete"] is True
    assert {r["nativeSessionId"] for r in run(["sessions"], env).of("session")} == world.every_id()

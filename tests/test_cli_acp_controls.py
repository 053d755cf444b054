"""An ACP source's learned controls across runs: each `agentctl` below is a new process
over the project's test agent and a real SQLite store.

A later sync that reads no session (every one retained) still publishes the modes and
options of the sessions the agent lists, learned by an earlier run and kept in the
private state directory; a session the agent no longer lists takes its controls out of
the source row; a later answer replaces a session's controls while retained sessions
keep theirs; a command in a new process is checked against the answer that readied its
session, not against what an earlier run kept.
"""

from __future__ import annotations

import stat

import pytest

from lib.drivers.acp_controls_book import DIRECTORY, digest
from tests.support.acp_cli import AgentSessions, World
from tests.support.cli import pipeline

AGENT = ["--seed", "3", "--page-size", "2", "--chunk-delay", "0"]


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path, ("acp", AGENT))


@pytest.fixture
def sessions(world) -> AgentSessions:
    sessions = AgentSessions(world.home("acp"))
    sessions.seed(3)
    return sessions


def synced(world: World, *args: str) -> dict:
    done = world.run("sync", "--json", *args)
    assert done.returncode == 0, done.stderr
    [publication] = done.of("publication")
    return publication


def kept_files(world: World):
    return sorted((world.state / DIRECTORY / digest("acp")).iterdir())


def test_a_second_sync_that_reads_no_session_publishes_the_same_modes_and_options(world, sessions):
    synced(world)
    first = world.capabilities()
    assert first["modes"] == ["ask", "code", "plan"]
    assert sorted(first["configOptions"]) == ["mode", "model", "profile", "verbose"]
    loads = len(world.loads("acp"))

    second = world.run("sync", "--json")
    assert second.returncode == 0, second.stderr
    assert len(world.loads("acp")) == loads  # the second run loaded nothing
    assert [r["action"] for r in second.of("published")] == ["retained"] * 3
    assert world.capabilities() == first


def test_the_kept_controls_are_private_files_one_per_session(world, sessions):
    synced(world)
    files = kept_files(world)
    assert len(files) == 3
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for directory in (world.state / DIRECTORY, world.state / DIRECTORY / digest("acp")):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_a_session_the_agent_no_longer_lists_takes_its_controls_out_of_the_source_row(world, sessions):
    sessions.edit("seed-000", modes=["ask", "code"], optionIds=["model"])
    sessions.edit("seed-001", modes=["ask", "code"], optionIds=["model"])
    sessions.edit("seed-002", modes=["ask", "review"], optionIds=["model", "profile"])
    synced(world)
    assert world.capabilities()["modes"] == ["ask", "code", "review"]
    assert sorted(world.capabilities()["configOptions"]) == ["model", "profile"]
    loads = len(world.loads("acp"))

    sessions.remove("seed-002")
    synced(world)
    assert len(world.loads("acp")) == loads  # nothing was read: the listing alone decided
    statuses = {row["key"]: row["status"] for row in world.index().sessions}
    assert statuses["acp/seed-002"] == "deleted" and statuses["acp/seed-000"] != "deleted"
    capabilities = world.capabilities()
    assert capabilities["modes"] == ["ask", "code"]
    assert sorted(capabilities["configOptions"]) == ["model"]
    assert len(kept_files(world)) == 2  # its kept file went with it


def test_the_composed_pipe_drops_an_unlisted_sessions_controls_too(world, sessions):
    sessions.edit("seed-002", modes=["ask", "review"])
    synced(world)
    assert world.capabilities()["modes"] == ["ask", "code", "plan", "review"]

    sessions.remove("seed-002")
    runs = pipeline([["list", "acp"], ["read"], ["prepare"], ["publish"]], world.env, timeout=120)
    assert [r.returncode for r in runs] == [0, 0, 0, 0], [r.stderr for r in runs]
    assert world.capabilities()["modes"] == ["ask", "code", "plan"]


def test_a_later_answer_replaces_a_sessions_controls_and_retained_sessions_keep_theirs(world, sessions):
    sessions.edit("seed-000", modes=["ask", "plan"])
    sessions.edit("seed-001", modes=["ask", "review"], optionIds=["model", "mode"])
    sessions.edit("seed-002", modes=["ask", "code"], optionIds=["model"])
    synced(world)
    assert world.capabilities()["modes"] == ["ask", "code", "plan", "review"]

    sessions.edit("seed-001", touch=True, modes=["ask", "debug"], optionIds=["model"])
    loads = len(world.loads("acp"))
    synced(world)
    assert world.loads("acp")[loads:] == ["begin seed-001", "end seed-001"]  # only the changed one
    capabilities = world.capabilities()
    assert capabilities["modes"] == ["ask", "code", "debug", "plan"]  # plan: seed-000, retained
    assert sorted(capabilities["configOptions"]) == ["mode", "model", "profile", "verbose"]  # seed-000's


def test_set_mode_in_a_new_process_is_checked_against_the_answer_that_readied_the_session(world, sessions):
    sessions.edit("seed-001", modes=["ask", "review"])
    synced(world)
    assert "review" in world.capabilities()["modes"]

    sessions.edit("seed-001", modes=["ask", "code"])  # the agent changed; no run has seen it
    refused = world.run("command", "set-mode", "acp", "seed-001", "review")
    [receipt] = refused.of("receipt")
    assert (receipt["status"], receipt["error"]["code"]) == ("unsupported", "unknown-mode"), refused.stderr
    # the command's resume answer replaced what the first sync kept, and its refresh published it
    assert world.capabilities()["modes"] == ["ask", "code", "plan"]

    accepted = world.run("command", "set-mode", "acp", "seed-001", "code")
    assert accepted.of("receipt")[0]["status"] == "succeeded", accepted.stderr

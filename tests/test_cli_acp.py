"""`agentctl` with an ACP source, as real processes over a real SQLite store: the project's
test agent (tests/support/acp_test_agent.py) as the source's `command`.

list (the agent's cursors), the composed pipe and sync (learned modes and options in the
published source row), commands with their receipts, and a faulty ACP source beside a
healthy one.
"""

from __future__ import annotations

import pytest

from tests.support.acp_cli import GUARD_SECONDS, World
from tests.support.cli import pipeline


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path, ("acp", ["--seed", "3", "--page-size", "2", "--chunk-delay", "0"]))


def test_list_writes_the_agent_sessions_page_by_page(world):
    listed = world.run("list", "acp", "--json")
    assert listed.returncode == 0, listed.stderr
    ids = [r["summary"]["nativeSessionId"] for r in listed.of("summary")]
    assert ids == ["seed-002", "seed-001", "seed-000"]
    [outcome] = listed.of("outcome")
    assert outcome["pages"] == 2 and outcome["inventoryComplete"]


def test_sync_publishes_every_session_and_the_learned_modes_and_options_in_the_source_row(world):
    synced = world.run("sync", "--json")
    assert synced.returncode == 0, synced.stderr
    index = world.index()
    assert sorted(row["key"] for row in index.sessions) == ["acp/seed-000", "acp/seed-001", "acp/seed-002"]
    [source] = index.sources
    capabilities = source["capabilities"]
    assert capabilities["modes"] == ["ask", "code", "plan"]
    assert sorted(capabilities["configOptions"]) == ["mode", "model", "profile", "verbose"]
    shown = world.run("show", "acp/seed-001", "--json")
    assert shown.returncode == 0, shown.stderr
    assert "this is reply #1." in shown.stdout


def test_the_composed_pipe_publishes_the_learned_capabilities_too(world):
    runs = pipeline([["list", "acp"], ["read"], ["prepare"], ["publish"]], world.env, timeout=GUARD_SECONDS)
    assert [r.returncode for r in runs] == [0, 0, 0, 0], [r.stderr for r in runs]
    [source] = world.index().sources
    assert source["capabilities"]["modes"] == ["ask", "code", "plan"]


def test_a_prompt_command_ends_with_a_succeeded_receipt_and_the_reply_is_published(world):
    done = world.run("command", "prompt", "acp", "seed-000", "hello from the cli")
    assert done.returncode == 0, done.stderr
    [receipt] = done.of("receipt")
    assert (receipt["status"], receipt["sourceId"], receipt["nativeSessionId"]) == ("succeeded", "acp", "seed-000")
    assert receipt["result"]["stopReason"] == "end_turn"
    shown = world.run("show", "acp/seed-000", "--json")
    assert "Echo: " in shown.stdout and "hello from the cli" in shown.stdout
    # the command's own resume taught the controls, and the refresh published them
    [source] = world.index().sources
    assert source["capabilities"]["modes"] == ["ask", "code", "plan"]


def test_mode_and_option_commands_are_checked_against_the_session(world):
    mode = world.run("command", "set-mode", "acp", "seed-001", "plan")
    assert mode.returncode == 0, mode.stderr
    assert mode.of("receipt")[0]["status"] == "succeeded"
    bad = world.run("command", "set-config-option", "acp", "seed-001", "profile", "gpt-z")
    assert bad.of("receipt")[0]["status"] == "failed", bad.stderr
    assert bad.of("receipt")[0]["error"]["code"] == "invalid-option-value"
    nested = world.run("command", "set-config-option", "acp", "seed-001", "profile", "llama")
    assert nested.of("receipt")[0]["status"] == "succeeded", nested.stderr
    rename = world.run("command", "rename", "acp", "seed-001", "A new title")
    assert rename.of("receipt")[0]["status"] == "unsupported"


def test_sync_beside_an_acp_agent_fault_publishes_the_healthy_source_and_exits_3(tmp_path):
    world = World(tmp_path, ("broken", ["--seed", "2", "--exit-on", "session/load"]),
                  ("healthy", ["--seed", "2"]))
    synced = world.run("sync", "--json")
    assert synced.returncode == 3, synced.stderr
    errors = synced.of("error")
    assert errors and {e["sourceId"] for e in errors} == {"broken"}
    assert {e["code"] for e in errors} <= {"agent-exited"}
    assert "exiting on session/load" not in synced.stdout + synced.stderr  # the agent's words stay out
    keys = sorted(row["key"] for row in world.index().sessions)
    assert keys == ["healthy/seed-000", "healthy/seed-001"]

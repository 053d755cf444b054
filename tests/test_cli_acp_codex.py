"""`agentctl` with a real third-party ACP agent: `codex-acp` (npm `@zed-industries/codex-acp`,
pinned exactly in package.json), offline against the fake OpenAI Responses API on
127.0.0.1 (tests/support/fake_responses_server.py), over a real SQLite store.

A start through `session/new` with its receipt, then list, sync (`session/load` of the
real agent's saved session) and a real prompt with its receipt, each a new agentctl
process and so a new codex-acp process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib.fabric.identity import load_or_create_identity
from lib.fabric.session_reader import SessionReader
from lib.fabric.store import open_store
from tests.support.acp_agents import CODEX_ACP, codex_acp_env, codex_acp_home
from tests.support.cli import agentctl_env, run
from tests.support.fake_responses_server import REPLY_TEXT, FakeResponsesServer

GUARD_SECONDS = 180  # a guard against a hang, never the measure of a test


@pytest.fixture(scope="module")
def server():
    with FakeResponsesServer() as server:
        yield server


@pytest.fixture
def world(tmp_path, server):
    if not CODEX_ACP.is_file():
        pytest.fail(f"the pinned codex-acp is missing ({CODEX_ACP}): run make install")
    home = codex_acp_home(tmp_path / "codex-home", server.url)
    project = tmp_path / "project"
    project.mkdir()
    env_table = "".join(f'{name} = "{value}"\n' for name, value in codex_acp_env(home).items())
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.codex-acp]\ndriver = "acp"\ncommand = {json.dumps([str(CODEX_ACP)])}\n'
                      f'cwd = "{project}"\n[sources.codex-acp.env]\n{env_table}')
    store_url = f"sqlite:///{tmp_path / 'fabric.sqlite3'}"
    env = agentctl_env(tmp_path / "state", config, AGENTCTL_STORE=store_url)
    return {"env": env, "project": project, "store": store_url, "state": tmp_path / "state"}


def agentctl(world, *args: str):
    return run(list(args), world["env"], timeout=GUARD_SECONDS)


def published(world):
    identity = load_or_create_identity(world["state"] / "identity.json")
    return SessionReader(open_store(world["store"]), identity.did, identity.did)


def test_codex_acp_start_list_load_and_a_real_prompt_with_receipts(world, server):
    started = agentctl(world, "command", "start", "codex-acp", "Say hello", "--session", "my-first-session")
    assert started.returncode == 0, started.stderr
    [receipt] = started.of("receipt")
    assert receipt["status"] == "succeeded", receipt
    assert receipt["nativeSessionId"] == "my-first-session"
    agent_id = receipt["result"]["agentSessionId"]
    assert receipt["result"]["stopReason"] == "end_turn" and agent_id != "my-first-session"
    assert "Say hello" in server.prompts
    # the refresh after the start published the agent's session, paired with the caller's id
    row = published(world).row(f"codex-acp/{agent_id}")
    assert row["startedAs"] == "my-first-session"

    listed = agentctl(world, "list", "codex-acp", "--json")
    assert listed.returncode == 0, listed.stderr
    [summary] = [r["summary"] for r in listed.of("summary")]
    assert (summary["nativeSessionId"], summary["title"]) == (agent_id, "Say hello")
    assert summary["cwd"] == str(world["project"])

    synced = agentctl(world, "sync", "--full", "--json")
    assert synced.returncode == 0, synced.stderr
    shown = agentctl(world, "show", f"codex-acp/{agent_id}", "--json")
    assert shown.returncode == 0, shown.stderr
    assert "Say hello" in shown.stdout and REPLY_TEXT in shown.stdout  # replayed by session/load
    [source] = published(world).index("all").sources
    assert "model" in source["capabilities"]["configOptions"]  # learned from codex-acp's answers

    prompted = agentctl(world, "command", "prompt", "codex-acp", agent_id, "Tell me more")
    assert prompted.returncode == 0, prompted.stderr
    [receipt] = prompted.of("receipt")
    assert (receipt["status"], receipt["nativeSessionId"]) == ("succeeded", agent_id)
    assert receipt["result"]["stopReason"] == "end_turn"
    assert "Tell me more" in server.prompts
    shown = agentctl(world, "show", f"codex-acp/{agent_id}", "--json")
    assert "Tell me more" in shown.stdout


def test_codex_acp_mode_and_option_commands_are_checked_against_its_controls(world):
    started = agentctl(world, "command", "start", "codex-acp", "Say hello")
    agent_id = started.of("receipt")[0]["result"]["agentSessionId"]
    refused = agentctl(world, "command", "set-config-option", "codex-acp", agent_id, "model", "no-such-model")
    assert refused.of("receipt")[0]["status"] == "failed", refused.stderr
    assert refused.of("receipt")[0]["error"]["code"] == "invalid-option-value"
    chosen = agentctl(world, "command", "set-config-option", "codex-acp", agent_id, "model", "gpt-5.4")
    assert chosen.of("receipt")[0]["status"] == "succeeded", chosen.stderr
    [source] = published(world).index("all").sources
    assert source["capabilities"]["configOptions"]["model"]["currentValue"] == "gpt-5.4"


def test_the_fake_model_server_listens_on_loopback_only(server):
    assert server.url.startswith("http://127.0.0.1:")
    assert Path(CODEX_ACP).name == "codex-acp"

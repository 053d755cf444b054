"""Read-only commands never wait for a writer: `agentctl sessions` and `agentctl show`
answer while another process holds SQLite's write lock on the store (real processes,
the real Codex app server, a real SQLite file).

Had a reader asked for the write lock it would have waited the store's busy timeout
and then failed (exit 1); the writer lets go only after the reader has answered."""

from __future__ import annotations

import hashlib

import pytest

from tests.fabric.holders import hold_write_transaction
from tests.support.cli import CODEX_BIN, agentctl_env, run
from tests.support.codex_home import demo_threads, make_codex_home


@pytest.fixture
def synced(tmp_path):
    home = make_codex_home(tmp_path / "codex-home", demo_threads())
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\ncodexBin = "{CODEX_BIN}"\n')
    env = agentctl_env(tmp_path / "state", config, AGENTCTL_STORE=f"sqlite:///{tmp_path / 'fabric.sqlite3'}")
    assert run(["sync"], env).returncode == 0
    return tmp_path / "fabric.sqlite3", env


def test_sessions_answers_while_another_process_holds_a_write_transaction(synced):
    path, env = synced
    with hold_write_transaction(path) as writer:
        result = run(["sessions", "--json"], env)
        assert writer.still_holding  # answered inside the writer's transaction
        assert writer.release() == "rolled-back"
    assert result.returncode == 0, result.stderr
    assert len(result.of("session")) == len(demo_threads())


def test_show_answers_while_another_process_holds_a_write_transaction(synced):
    path, env = synced
    key = run(["sessions", "--json"], env).of("session")[0]["key"]
    with hold_write_transaction(path) as writer:
        manifest = run(["show", key], env)
        events = run(["show", key, "--events"], env)
        assert writer.still_holding
        assert writer.release() == "rolled-back"
    assert manifest.returncode == 0 and events.returncode == 0, manifest.stderr + events.stderr
    assert manifest.records[0]["key"] == key
    assert events.records


def test_sessions_on_a_store_that_never_published_this_space_writes_nothing(synced, tmp_path):
    path, env = synced
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    result = run(["--space", "did:key:z6MkotherSpaceNeverPublished", "sessions", "--json"], env)
    assert result.returncode == 0, result.stderr
    assert result.of("session") == []
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before

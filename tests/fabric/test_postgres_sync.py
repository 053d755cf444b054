"""Two machines, one PostgreSQL space: `agentctl sync` as two real processes at once,
each with its own Codex home, state directory and source, publishing into one space
(the same identity) on one PostgreSQL store. Both sets of sessions land; the publish
lock (an advisory lock) serialises the two index commits, so neither is lost."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime

from lib.fabric.identity import load_or_create_identity
from lib.fabric.session_reader import SessionReader
from lib.fabric.store import open_store
from tests.support.cli import AGENTCTL, agentctl_env, run, write_codex_config
from tests.support.codex_home import make_codex_home, many_threads

GUARD = 300


def machine(tmp_path, name: str, start: datetime, store_url: str, identity) -> tuple[dict, list]:
    """A Codex home of its own, a config naming it as source `name`, a state directory."""
    threads = many_threads(6, start=start)
    home = make_codex_home(tmp_path / name / "codex-home", threads)
    config = write_codex_config(tmp_path / name / "config.toml", home, source_id=name)
    env = agentctl_env(tmp_path / name / "state", config,
                       AGENTCTL_STORE=store_url, AGENTCTL_IDENTITY=str(identity))
    return env, threads


def test_two_syncs_from_two_codex_homes_publish_into_one_postgres_space_at_once(tmp_path, postgres_url):
    identity = tmp_path / "identity.json"
    owner = load_or_create_identity(identity).did
    laptop, laptop_threads = machine(tmp_path, "laptop", datetime(2026, 3, 1, 9, tzinfo=UTC),
                                     postgres_url, identity)
    desktop, desktop_threads = machine(tmp_path, "desktop", datetime(2026, 5, 1, 9, tzinfo=UTC),
                                       postgres_url, identity)

    syncs = [subprocess.Popen([AGENTCTL, "sync"], env=env, text=True, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for env in (laptop, desktop)]
    outputs = [sync.communicate(timeout=GUARD) for sync in syncs]
    for sync, (_out, err) in zip(syncs, outputs, strict=True):
        assert sync.returncode == 0, err

    store = open_store(postgres_url)
    try:
        rows = SessionReader(store, owner, owner).index("all").sessions
        published = {(row["sourceId"], row["nativeSessionId"]) for row in rows}
    finally:
        store.close()
    expected = {("laptop", t.id) for t in laptop_threads} | {("desktop", t.id) for t in desktop_threads}
    assert published == expected
    assert all(row["status"] == "complete" for row in rows)

    # each machine reads everything both published, and a later sync of one keeps the other's
    for env in (laptop, desktop):
        listed = run(["sessions"], env)
        assert listed.returncode == 0, listed.stderr
        assert {(r["sourceId"], r["nativeSessionId"]) for r in listed.of("session")} == expected
    again = run(["sync"], laptop)
    assert again.returncode == 0, again.stderr
    listed = run(["sessions"], desktop)
    assert {(r["sourceId"], r["nativeSessionId"]) for r in listed.of("session")} == expected


def test_an_unreachable_postgres_store_is_one_line_that_never_shows_the_password(tmp_path):
    url = f"postgresql://agent:hunter2-secret@/fabric?host={tmp_path}/no-server-here"
    env = agentctl_env(tmp_path / "state", AGENTCTL_STORE=url)
    for args in (["sessions"], ["show", "codex/x"], ["sync", "--lock-timeout", "1"]):
        result = run(args, env)
        assert result.returncode in (1, 2), (args, result.stderr)
        assert "hunter2" not in result.stderr + result.stdout
    result = run(["sessions"], env)
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("agentctl: store postgresql://agent:***@/fabric") and "failed" in line


def test_a_postgres_store_named_in_the_configuration_file_is_used(tmp_path, postgres_url):
    config = tmp_path / "config.toml"
    config.write_text(f'store = "{postgres_url}"\n')
    env = agentctl_env(tmp_path / "state", config)
    listed = run(["sessions"], env)
    assert listed.returncode == 0, listed.stderr
    store = open_store(postgres_url)
    try:
        assert store.store_id().startswith("postgresql:")  # the schema was made there
    finally:
        store.close()

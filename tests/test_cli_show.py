"""`agentctl show` as a real process after a real `agentctl sync` of the demo Codex home:
a transcript on a terminal (a pseudo-terminal), the manifest JSON when piped or with
--json, native events as JSON lines with --events."""

from __future__ import annotations

import json

import pytest

from lib.fabric.session_reader import SessionReader
from lib.fabric.sqlite_store import SQLiteStore
from lib.pipeline.records import json_default
from tests.support.cli import CODEX_BIN, agentctl_env, run, run_on_terminal
from tests.support.codex_home import demo_threads, make_codex_home


@pytest.fixture(scope="module")
def synced(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("show")
    home = make_codex_home(tmp_path / "codex-home", demo_threads())
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\ncodexBin = "{CODEX_BIN}"\n')
    store = tmp_path / "fabric.sqlite3"
    env = agentctl_env(tmp_path / "state", config, AGENTCTL_STORE=f"sqlite:///{store}",
                       AGENTCTL_CLOCK="2026-02-12T09:00:00.000Z")
    synced = run(["sync"], env)
    assert synced.returncode == 0, synced.stderr
    rows = {row["nativeSessionId"]: row for row in run(["sessions", "--json"], env).of("session")}
    did = json.loads((tmp_path / "state" / "identity.json").read_text())["did"]
    return env, store, did, rows


def published_manifest_json(store_path, did: str, key: str) -> str:
    """The manifest document `show` has always written when piped: compact JSON, one line."""
    store = SQLiteStore(str(store_path))
    try:
        manifest = SessionReader(store, did, did).manifest(key)
    finally:
        store.close()
    return json.dumps(manifest, ensure_ascii=False, default=json_default) + "\n"


def test_show_on_a_terminal_prints_the_transcript(synced):
    env, _store, _did, rows = synced
    thread = next(t for t in demo_threads() if t.name == "Fix rounding in invoice totals")
    key = rows[thread.id]["key"]
    shown = run_on_terminal(["show", key], env, columns=72)
    assert shown.returncode == 0, shown.stdout
    lines = shown.stdout.splitlines()
    assert lines[:2] == ["Fix rounding in invoice totals", "=" * len("Fix rounding in invoice totals")]
    for expected in (f"key        {key}", "source     codex (codex-app-server)", "directory  /home/demo/src/billing",
                     "branch     (none)", "created    2026-02-10 14:00:00 UTC", "updated    2026-02-10 14:30:00 UTC",
                     "observed   2026-02-12 09:00:00 UTC", "status     complete", "messages   4"):
        assert expected in lines, expected
    assert "user · 2026-02-10 14:00:00" in lines
    assert "  Invoice totals are off by a cent on some orders. Find out why." in lines
    assert lines.count("assistant · 14:00:00") == 1 and "assistant · 14:12:00" in lines
    assert "  Make the change and add a test for 0.1 + 0.2." in lines
    text = " ".join(line.strip() for line in lines)
    assert "switching to Decimal fixes it." in text  # wrapped, all of it there
    assert all(len(line) <= 72 for line in lines)
    assert not shown.stdout.lstrip().startswith("{")


def test_show_piped_and_with_json_writes_the_manifest_as_before(synced):
    env, store, did, rows = synced
    for row in rows.values():
        key = row["key"]
        expected = published_manifest_json(store, did, key)
        piped = run(["show", key], env)
        assert piped.returncode == 0, piped.stderr
        assert piped.stdout == expected  # byte for byte
        assert run(["show", key, "--json"], env).stdout == expected
    key = next(iter(rows.values()))["key"]
    on_terminal = run_on_terminal(["show", key, "--json"], env)
    assert on_terminal.returncode == 0, on_terminal.stdout
    manifest = json.loads(published_manifest_json(store, did, key))
    assert on_terminal.stdout == json.dumps(manifest, ensure_ascii=False, indent=2) + "\n"  # indented, as before


def test_show_events_stays_json_lines_on_a_terminal(synced):
    env, _store, _did, rows = synced
    thread = demo_threads()[0]
    key = rows[thread.id]["key"]
    shown = run_on_terminal(["show", key, "--events"], env)
    assert shown.returncode == 0, shown.stdout
    assert [json.loads(line)["id"] for line in shown.stdout.splitlines()] == [turn.id for turn in thread.turns]
    assert shown.stdout == run(["show", key, "--events"], env).stdout


def test_show_of_an_unknown_key_on_a_terminal_is_one_line_and_exit_5(synced):
    env, _store, _did, _rows = synced
    shown = run_on_terminal(["show", "codex/no-such-session"], env)
    assert shown.returncode == 5
    assert shown.stdout.count("\n") == 1 and "agentctl sessions" in shown.stdout

"""The Codex home fingerprint: real files, no Codex started (it is only stat'ed)."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path

import pytest

from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.drivers.codex_fingerprint import codex_inventory_fingerprint
from lib.types import AgentSourceConfig
from tests.support.codex_home import demo_threads, make_codex_home

WINDOW_NS = 2_000_000_000


@pytest.fixture
def home(tmp_path) -> Path:
    return make_codex_home(tmp_path / "home", demo_threads())


@pytest.fixture
def config(home, codex_bin) -> AgentSourceConfig:
    return AgentSourceConfig(id="codex", driver="codex-app-server", codex_home=str(home), codex_bin=codex_bin)


def digest(config: AgentSourceConfig) -> str:
    fingerprint = codex_inventory_fingerprint(config)
    assert fingerprint is not None
    return fingerprint.digest


def a_rollout(home: Path) -> Path:
    return sorted((home / "sessions").rglob("*.jsonl"))[0]


def test_the_driver_offers_the_codex_fingerprint_and_it_is_stable(config):
    first = CodexAppServerDriver.inventory_fingerprint(config)
    assert first is not None and first.files == len(demo_threads()) + 3  # + program, session index, config.toml
    assert digest(config) == first.digest


def test_a_same_size_rewrite_with_its_time_set_back_changes_the_digest(config, home):
    path = a_rollout(home)
    before = digest(config)
    info = path.stat()
    text = path.read_text()
    path.write_text(text.replace("a", "b", 1) if "a" in text else text.upper())
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))  # size and mtime as they were
    assert path.stat().st_size == info.st_size and path.stat().st_mtime_ns == info.st_mtime_ns
    assert digest(config) != before, "the status-change time still moved"


@pytest.mark.parametrize("change", ["append", "delete", "archive", "new", "index", "config"])
def test_each_change_to_what_codex_lists_changes_the_digest(config, home, change):
    before = digest(config)
    path = a_rollout(home)
    if change == "append":
        with path.open("a") as out:
            out.write("{}\n")
    elif change == "delete":
        path.unlink()
    elif change == "archive":
        path.rename(home / "archived_sessions" / path.name)
    elif change == "new":
        (path.parent / "rollout-new.jsonl").write_text("{}\n")
    elif change == "index":
        with (home / "session_index.jsonl").open("a") as out:
            out.write('{"id":"x","thread_name":"renamed"}\n')
    else:
        (home / "config.toml").write_text('model = "other"\n')
    assert digest(config) != before


def test_a_write_to_the_state_database_changes_the_digest_and_its_shm_does_not(config, home):
    database = home / "state_5.sqlite"
    with sqlite3.connect(database) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, title TEXT)")
        db.execute("INSERT INTO threads VALUES ('a', 'first')")
    keep = sqlite3.connect(database)  # holds the log open, as a running Codex does
    keep.execute("PRAGMA wal_autocheckpoint=0")
    before = digest(config)
    (home / "state_5.sqlite-shm").write_bytes(b"\0" * 32768)
    assert digest(config) == before, "the shared-memory index is not what Codex lists"
    keep.execute("UPDATE threads SET title = 'second'")
    keep.commit()
    assert digest(config) != before
    keep.close()


def test_an_empty_write_ahead_log_counts_as_none(config, home):
    (home / "state_5.sqlite").write_bytes(b"x" * 4096)
    before = digest(config)
    (home / "state_5.sqlite-wal").write_bytes(b"")
    assert digest(config) == before


def test_a_file_changed_just_now_is_not_settled_and_an_old_home_is(config, home):
    fresh = codex_inventory_fingerprint(config)
    assert fresh is not None and not fresh.settled(WINDOW_NS)  # the fixture was just written
    for path in [*(home / "sessions").rglob("*.jsonl"), *(home / "archived_sessions").glob("*"),
                 home / "session_index.jsonl"]:
        os.utime(path, ns=(0, fresh.taken_ns - 10 * WINDOW_NS))  # ctime is still now
    assert not codex_inventory_fingerprint(config).settled(WINDOW_NS), "a status change counts too"
    old = dataclasses.replace(fresh, newest_change_ns=fresh.taken_ns - WINDOW_NS - 1)
    assert old.settled(WINDOW_NS)


def test_no_fingerprint_when_codex_may_read_elsewhere(config, home, tmp_path):
    assert codex_inventory_fingerprint(config.model_copy(update={"command": ["codex", "app-server"]})) is None
    assert codex_inventory_fingerprint(config.model_copy(update={"codex_transport": "proxy"})) is None
    (home / "config.toml").write_text("not = [valid toml")
    assert codex_inventory_fingerprint(config) is None
    (home / "config.toml").unlink()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (home / "sessions" / "linked").symlink_to(outside)
    assert codex_inventory_fingerprint(config) is None


def test_the_databases_are_looked_for_where_sqlite_home_points(config, home, tmp_path):
    elsewhere = tmp_path / "dbs"
    elsewhere.mkdir()
    (home / "config.toml").write_text(f'sqlite_home = "{elsewhere}"\n')
    before = digest(config)
    (home / "state_5.sqlite").write_bytes(b"x" * 10)  # not where Codex looks now
    assert digest(config) == before
    (elsewhere / "state_5.sqlite").write_bytes(b"x" * 10)
    assert digest(config) != before


def test_a_missing_codex_program_gives_no_fingerprint(config):
    assert codex_inventory_fingerprint(config.model_copy(update={"codex_bin": "/nonexistent/codex"})) is None


def test_the_registry_takes_the_same_fingerprint_without_the_driver_and_none_for_a_driver_without_one(config):
    from lib.drivers import registry

    assert registry.inventory_fingerprint(config).digest == CodexAppServerDriver.inventory_fingerprint(config).digest
    claude = AgentSourceConfig(id="claude", driver="claude-agent-sdk")
    assert registry.inventory_fingerprint(claude) is None


def test_the_walk_holds_no_stat_a_file_of_a_large_directory(tmp_path):
    """A day of 2,000 rollouts: the walk keeps a name a file while it stats them one at a
    time (a DirEntry kept the stat it was asked for until its directory was done: about
    1.9 KB a file at once, issue 14 goal 4)."""
    import tracemalloc

    from lib.drivers.codex_home_files import home_digest

    day = tmp_path / "home" / "sessions" / "2026" / "01" / "17"
    day.mkdir(parents=True)
    for n in range(2000):
        (day / f"rollout-{n:05d}.jsonl").write_text("{}\n")
    home_digest("/bin/true", str(tmp_path / "home"), str(tmp_path / "home"))  # imports and caches warmed
    tracemalloc.start()
    try:
        digest = home_digest("/bin/true", str(tmp_path / "home"), str(tmp_path / "home"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert digest is not None and digest.files == 2001  # the program and the rollouts
    assert peak < 400 * 2000, peak

"""Idle resync (`agentctl sync` when the Codex home did not change) with the real pinned
`codex app-server` and a real SQLite store.

Codex is named through a wrapper script that appends a line to a log each time it is
run, so a test sees whether a sync started Codex at all. Every change Codex can make
to what it lists (a new thread, an appended turn, a rename, a title kept only in its
state database, an archive, a deletion) must be seen by the very next sync.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import stat
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.drivers.codex_fingerprint import codex_inventory_fingerprint
from lib.pipeline.unchanged_sources import DIRECTORY, UNSURE_SECONDS
from lib.types import AgentSourceConfig, PromptInput
from tests.support.cli import CODEX_BIN, agentctl_env, pipeline, run
from tests.support.codex_home import (
    FixtureThread,
    FixtureTurn,
    demo_threads,
    make_codex_home,
    uuid7_like,
    write_fake_model_config,
    write_thread,
)
from tests.support.fake_responses_server import FakeResponsesServer


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.home = make_codex_home(tmp_path / "codex-home", demo_threads())
        self.log = tmp_path / "codex-runs.log"
        self.wrapper = tmp_path / "codex-wrapper"
        self.wrapper.write_text(f'#!/bin/sh\necho "$CODEX_HOME $@" >> "{self.log}"\nexec "{CODEX_BIN}" "$@"\n')
        self.wrapper.chmod(0o700)
        self.config_path = tmp_path / "config.toml"
        self.config_path.write_text(
            f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{self.home}"\ncodexBin = "{self.wrapper}"\n'
        )
        self.source = AgentSourceConfig.model_validate(
            {"id": "codex", "driver": "codex-app-server", "codexHome": str(self.home), "codexBin": str(CODEX_BIN)}
        )

    def env(self, store: str = "fabric.sqlite3") -> dict[str, str]:
        return agentctl_env(self.tmp / "state", self.config_path, AGENTCTL_STORE=f"sqlite:///{self.tmp / store}")

    def starts(self) -> int:
        """How many times Codex was run so far."""
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def sync(self, *args: str, store: str = "fabric.sqlite3"):
        done = run(["sync", *args], self.env(store))
        assert done.returncode == 0, done.stderr
        return done

    def settle(self, home: Path | None = None) -> None:
        """Wait until no file of the home changed within the unsure window (a sync
        does not trust a fingerprint taken sooner: a same-tick write could hide)."""
        config = self.source.model_copy(update={"codex_bin": str(self.wrapper), "codex_home": str(home or self.home)})
        fingerprint = codex_inventory_fingerprint(config)
        assert fingerprint is not None
        wait = fingerprint.newest_change_ns / 1e9 + UNSURE_SECONDS + 0.1 - time.time()
        if wait > 0:
            time.sleep(wait)

    def prime(self) -> None:
        """Sync until the fingerprint is kept, then settle the home again. The first sync
        creates Codex's state database (the home changes while it is listed, so nothing
        is kept); a later one, on a settled home, keeps it, unless Codex happened to
        checkpoint its database as it exited (it does so at will), which changes the
        home again: then the next one does."""
        changed: list[list[str]] = []  # what each sync that kept nothing saw change, for the message
        for _ in range(5):
            before = self.home_files()
            self.sync()
            if self.fingerprint_files():
                break
            after = self.home_files()
            changed.append(sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path)))
            self.settle()
        assert self.fingerprint_files(), f"a complete sync of a settled home keeps its fingerprint (changed: {changed})"
        self.settle()

    def home_files(self) -> dict[str, tuple[int, int]]:
        """(size, modification time) of every file in the Codex home, by relative path."""
        found = {}
        for path in self.home.rglob("*"):
            if path.is_file():
                info = path.stat()
                found[str(path.relative_to(self.home))] = (info.st_size, info.st_mtime_ns)
        return found

    def fingerprint_files(self) -> list[Path]:
        directory = self.tmp / "state" / DIRECTORY
        return sorted(directory.glob("*.json")) if directory.is_dir() else []

    def sessions(self, *args: str) -> dict[str, dict]:
        listed = run(["sessions", *args], self.env())
        assert listed.returncode == 0, listed.stderr
        return {row["nativeSessionId"]: row for row in listed.of("session")}

    def codex(self) -> CodexAppServerDriver:
        """A driver over the real Codex (not the wrapper), to change the home as Codex does."""
        return CodexAppServerDriver(self.source)


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path)


def test_an_unchanged_home_is_not_listed_and_codex_is_not_started(world):
    world.prime()
    before = world.sessions()
    started = world.starts()

    idle = world.sync()

    assert world.starts() == started, "an unchanged home must not start codex"
    (outcome,) = idle.of("outcome")
    assert outcome["inventoryUnchanged"] is True and outcome["sourceId"] == "codex"
    (publication,) = idle.of("publication")
    (row,) = publication["sources"]
    assert row["complete"] is True and row["inventoryComplete"] is True
    assert publication["sessionCount"] == len(demo_threads())
    assert publication["idle"] is True and publication["written"] == 0, "nothing was published"
    assert world.sessions() == before, "previous rows stay as they are"
    # and it stays idle: the fingerprint is kept again for the new generation
    world.sync()
    assert world.starts() == started


def test_full_lists_an_unchanged_home(world):
    world.prime()
    started = world.starts()
    full = world.sync("--full")
    assert world.starts() == started + 1
    assert not any(o.get("inventoryUnchanged") for o in full.of("outcome"))
    assert {p["action"] for p in full.of("published")} == {"unchanged"}


def test_the_kept_fingerprint_is_a_private_file_in_a_private_directory(world):
    world.prime()
    kept = world.fingerprint_files()
    assert len(kept) == 2, "the source's fingerprint and the publication an idle sync reports"
    assert {stat.S_IMODE(path.stat().st_mode) for path in kept} == {0o600}
    assert stat.S_IMODE(kept[0].parent.stat().st_mode) == 0o700
    for path in kept:
        assert str(world.home) not in path.read_text(), "digests and counts, not the provider's paths"


def test_a_new_thread_is_seen_by_the_next_sync(world):
    world.prime()
    created = datetime(2026, 2, 11, 8, 0, tzinfo=UTC)
    new = FixtureThread(id=uuid7_like(900, created), created_at=created,
                        turns=(FixtureTurn(id=uuid7_like(901, created), user="A new question", agent="An answer"),))
    write_thread(world.home, new)
    started = world.starts()
    world.sync()
    assert world.starts() == started + 1
    assert world.sessions()[new.id]["status"] == "complete"


def test_an_appended_turn_is_seen_by_the_next_sync(world):
    # A turn appended the way Codex appends one: a prompt through the real Codex, with
    # a fake model on 127.0.0.1 (the thread is re-recorded as the fake provider's).
    thread = dataclasses.replace(demo_threads()[0], model_provider="fake", cwd=str(world.tmp))
    write_thread(world.home, thread)
    with FakeResponsesServer() as server:
        write_fake_model_config(world.home, server.url)
        world.prime()
        with world.codex() as codex:
            assert codex.prompt(thread.id, PromptInput(text="One more thing")).status == "succeeded"
    second = world.sync()
    written = [p["key"] for p in second.of("published") if p["action"] == "written"]
    assert written == [f"codex/{thread.id}"]
    events = run(["show", f"codex/{thread.id}", "--events"], world.env())
    assert len(events.records) == len(thread.turns) + 1


def test_a_rename_through_codex_is_seen_by_the_next_sync(world):
    world.prime()
    thread = demo_threads()[1]
    with world.codex() as codex:
        assert codex.rename_session(thread.id, "Renamed while agentctl was idle").status == "succeeded"
    world.sync()
    assert world.sessions()[thread.id]["title"] == "Renamed while agentctl was idle"


def test_a_title_codex_keeps_only_in_its_state_database_is_seen_by_the_next_sync(world):
    world.prime()
    thread = demo_threads()[2]
    (database,) = world.home.glob("state_*.sqlite")
    with sqlite3.connect(database) as db:  # no rollout file, no session index: the database alone
        assert db.execute("UPDATE threads SET title = ? WHERE id = ?", ("Set in the database", thread.id)).rowcount == 1
    db.close()
    started = world.starts()
    world.sync()
    assert world.starts() == started + 1
    assert world.sessions()[thread.id]["title"] == "Set in the database"


def test_an_archive_through_codex_is_seen_by_the_next_sync(world):
    world.prime()
    thread = next(t for t in demo_threads() if not t.archived)
    with world.codex() as codex:
        codex.transport.request("thread/archive", {"threadId": thread.id})
    world.sync()
    assert world.sessions()[thread.id]["archived"] is True


def test_a_deletion_through_codex_is_seen_by_the_next_sync(world):
    world.prime()
    thread = demo_threads()[3]
    with world.codex() as codex:
        codex.transport.request("thread/delete", {"threadId": thread.id})
    world.sync()
    assert set(world.sessions("--status", "deleted")) == {thread.id}


def test_another_publication_since_the_last_sync_makes_the_next_sync_list(world):
    world.prime()
    thread = demo_threads()[0]
    # a targeted refresh by another process: the store moved on without this sync
    runs = pipeline([["read", "--source", "codex", thread.id], ["publish"]], world.env())
    assert runs[-1].returncode == 0, runs[-1].stderr
    started = world.starts()
    world.sync()
    assert world.starts() > started


def test_a_sync_into_another_store_lists_the_unchanged_home(world):
    world.prime()
    started = world.starts()
    other = world.sync(store="other.sqlite3")
    assert world.starts() == started + 1
    assert (other.of("publication")[0])["sessionCount"] == len(demo_threads())


def test_a_terminal_summary_says_the_source_was_not_listed(world):
    from tests.support.cli import run_on_terminal

    world.prime()
    shown = run_on_terminal(["sync"], world.env())
    assert shown.returncode == 0, shown.stdout
    assert "codex: home unchanged since the last complete sync, not listed" in shown.stdout
    assert os.path.exists(world.fingerprint_files()[0])


def test_with_two_sources_the_unchanged_one_is_not_started_and_the_changed_one_is_listed(world):
    other_home = make_codex_home(world.tmp / "other-home", demo_threads()[:2])
    world.config_path.write_text(
        world.config_path.read_text()
        + f'[sources.other]\ndriver = "codex-app-server"\ncodexHome = "{other_home}"\ncodexBin = "{world.wrapper}"\n'
    )
    for _ in range(5):
        world.sync()
        if len(world.fingerprint_files()) == 3:  # both sources and the idle publication
            break
        world.settle()
        world.settle(other_home)
    assert len(world.fingerprint_files()) == 3
    world.settle()
    world.settle(other_home)
    created = datetime(2026, 2, 11, 8, 0, tzinfo=UTC)
    new = FixtureThread(id=uuid7_like(990, created), created_at=created,
                        turns=(FixtureTurn(id=uuid7_like(991, created), user="Only here", agent="Yes"),))
    write_thread(other_home, new)
    before = [line.split()[0] for line in world.log.read_text().splitlines()]

    mixed = world.sync()

    started = [line.split()[0] for line in world.log.read_text().splitlines()][len(before):]
    assert started == [str(other_home)], "only the changed source's codex ran"
    outcomes = {o["sourceId"]: o for o in mixed.of("outcome")}
    assert outcomes["codex"].get("inventoryUnchanged") is True
    assert not outcomes["other"].get("inventoryUnchanged") and outcomes["other"]["complete"] is True
    (publication,) = mixed.of("publication")
    assert not publication.get("idle")
    rows = {r["sourceId"]: r for r in publication["sources"]}
    assert rows["codex"]["complete"] is True and rows["other"]["complete"] is True
    sessions = world.sessions()
    assert sessions[new.id]["status"] == "complete"
    assert all(sessions[t.id]["status"] == "complete" for t in demo_threads())


def test_a_home_changed_within_the_unsure_window_is_listed_again_by_the_next_sync(world):
    world.prime()
    created = datetime(2026, 2, 11, 9, 0, tzinfo=UTC)
    new = FixtureThread(id=uuid7_like(970, created), created_at=created,
                        turns=(FixtureTurn(id=uuid7_like(971, created), user="Just now", agent="Yes"),))
    path = write_thread(world.home, new)
    ahead = time.time() + 600  # a time no sync can see as settled: stands for "changed just now"
    os.utime(path, (ahead, ahead))
    started = world.starts()
    world.sync()
    assert world.sessions()[new.id]["status"] == "complete"
    assert not world.fingerprint_files(), "a fingerprint with a change inside the window is not kept"
    world.sync()
    assert world.starts() == started + 2, "so the next sync lists again"

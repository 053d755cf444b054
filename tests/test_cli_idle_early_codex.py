"""Codex started by the idle fast path when a source's home changed (session 23:
lib/pipeline/idle_early_start.py, lib/drivers/codex_early.py): the normal path's driver
takes that very child, the fingerprint is the one taken before it started, and a child
nobody takes is ended, whatever way the run ends. Real homes, the real pinned Codex
(through the wrapper that logs each start), real processes.

Session 25: that child is also initialized and asked for its first pages early, and the
driver takes those answers (the tests at the end).

Each run carries a marker in its environment, which every Codex it starts inherits; after
the run no live process may carry it (an orphan would)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid

import pytest

from lib.drivers import codex_early
from lib.drivers.codex_app_server import CodexAppServerDriver, _client_version
from lib.drivers.codex_fingerprint import codex_inventory_fingerprint
from lib.drivers.codex_list_ahead import HeldBytes
from lib.pipeline.idle_early_start import SEQUENCE_NAME, start_changed_homes
from lib.pipeline.idle_inputs import FILE_NAME, load_answer
from tests.support.cli import AGENTCTL
from tests.test_cli_idle_fast_path import agentctl, steady_world
from tests.test_cli_idle_sync import World

HANG_GUARD = 60.0  # seconds: only a hang fails on it
MARK = "AGENTCTL_TEST_EARLY_CODEX_MARK"


@pytest.fixture
def world(tmp_path) -> World:
    world = steady_world(tmp_path)
    world.prime()
    assert agentctl(["sync", "--json"], world.env()).fast, "the next unchanged sync is answered fast"
    return world


def marked(mark: str) -> list[int]:
    """Live processes whose environment carries `mark`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if f"{MARK}={mark}".encode() in handle.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                pass  # gone, or not ours
    return found


def assert_no_orphan(mark: str) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while marked(mark):
        assert time.monotonic() < deadline, f"hang guard: processes {marked(mark)} outlived agentctl"
        time.sleep(0.05)


def append_a_line(world: World) -> None:
    rollout = sorted((world.home / "sessions").rglob("rollout-*.jsonl"))[0]
    with rollout.open("a") as handle:
        handle.write("\n")


def test_a_changed_home_starts_codex_once_and_the_driver_takes_that_child(world):
    append_a_line(world)
    started, mark = world.starts(), uuid.uuid4().hex
    done = agentctl(["sync", "--json"], {**world.env(), MARK: mark})
    assert done.returncode == 0, done.stderr
    assert not done.fast and '"idle":true' not in done.stdout
    assert world.starts() == started + 1, "started once: the fast path's child was the driver's"
    assert_no_orphan(mark)


def test_the_driver_adopts_the_child_and_the_fingerprint_predates_it(world, monkeypatch):
    append_a_line(world)
    for name, value in world.env().items():
        monkeypatch.setenv(name, value)
    assert start_changed_homes([], os.environ) == 1
    try:
        (early_pid,) = codex_early.pid_of_started()
        config = world.source.model_copy(update={"codex_bin": str(world.wrapper)})
        taken = codex_inventory_fingerprint(config)  # the digest taken before the start, once
        assert taken is not None
        kept = json.loads((world.tmp / "state" / "inventory-fingerprints" / FILE_NAME).read_text())
        assert taken.digest != kept["inputs"]["fingerprints"]["codex"], "the changed home's digest"
        assert codex_early.take_fingerprint(str(world.wrapper), str(world.home), str(world.home)) is None
        driver = CodexAppServerDriver(config)
        driver.collection_only = True  # as sync's driver pool makes it
        driver.start()
        try:
            assert driver.transport.pid == early_pid and codex_early.started() == 0
            assert driver.list_sessions().sessions, "the adopted child answers"
        finally:
            driver.stop()
    finally:
        codex_early.discard()


def test_a_child_for_another_launch_is_not_adopted_and_is_ended(world, monkeypatch):
    append_a_line(world)
    for name, value in world.env().items():
        monkeypatch.setenv(name, value)
    assert start_changed_homes([], os.environ) == 1
    (early_pid,) = codex_early.pid_of_started()
    config = world.source.model_copy(update={"codex_bin": str(world.wrapper), "env": {"SOMETHING": "1"}})
    driver = CodexAppServerDriver(config)  # its environment is not the one started early
    driver.start()
    try:
        assert driver.transport.pid != early_pid and codex_early.started() == 1
    finally:
        driver.stop()
    codex_early.discard()
    assert codex_early.started() == 0
    with pytest.raises(ProcessLookupError):
        os.kill(early_pid, 0)  # ended and reaped


def test_nothing_starts_for_an_unchanged_home_or_another_command_line(world, monkeypatch):
    for name, value in world.env().items():
        monkeypatch.setenv(name, value)
    assert start_changed_homes([], os.environ) == 0  # unchanged
    append_a_line(world)
    assert start_changed_homes(["other"], os.environ) == 0  # the answer was kept for `sync` alone
    monkeypatch.setenv("AGENTCTL_NO_IDLE_FAST_PATH", "1")
    assert start_changed_homes([], os.environ) == 0
    assert codex_early.started() == 0


def test_a_child_the_normal_path_does_not_need_is_ended_fake_changed_digest(world):
    """A fake: the kept answer's digest is altered, so the fast path takes the unchanged
    home for a changed one and starts Codex; the normal path finds it unchanged, answers
    idle and ends the child."""
    path = world.tmp / "state" / "inventory-fingerprints" / FILE_NAME
    kept = json.loads(path.read_text())
    kept["inputs"]["fingerprints"]["codex"] = "0" * 64
    path.write_text(json.dumps(kept))
    started, mark = world.starts(), uuid.uuid4().hex
    done = agentctl(["sync", "--json"], {**world.env(), MARK: mark})
    assert done.returncode == 0, done.stderr
    assert '"idle":true' in done.stdout, "nothing was listed"
    assert world.starts() == started + 1, "the fast path started it"
    assert_no_orphan(mark)


def test_a_normal_path_that_fails_ends_the_child_started_early(world):
    append_a_line(world)
    world.config_path.write_text(world.config_path.read_text() + "[sources.broken\n")  # not TOML
    started, mark = world.starts(), uuid.uuid4().hex
    done = agentctl(["sync", "--json"], {**world.env(), MARK: mark})
    assert done.returncode != 0 and "agentctl:" in done.stderr
    assert world.starts() == started + 1, "the fast path started it (the kept plan named the home)"
    assert_no_orphan(mark)


def test_an_agentctl_killed_outright_leaves_no_codex_behind(world):
    append_a_line(world)
    started, mark = world.starts(), uuid.uuid4().hex
    process = subprocess.Popen([sys.executable, AGENTCTL, "sync", "--json"], env={**world.env(), MARK: mark},
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + HANG_GUARD
    while world.starts() == started and process.poll() is None:
        assert time.monotonic() < deadline, "hang guard: Codex never started"
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)  # no atexit, no finally: Codex sees its stdin close
    process.wait()
    assert_no_orphan(mark)


# -- the early start's listing (session 25: lib/drivers/codex_early_list.py) ---------------
# The child is initialized at once and, once the source's observation sequence is allocated
# in the store, asked for its first `thread/list` pages; the driver that adopts it takes
# those answers instead of asking again, the pages only when the run lists from that very
# sequence.

SOURCE = "codex"


def observation_sequence(world) -> int:
    with sqlite3.connect(world.tmp / "fabric.sqlite3") as db:
        return db.execute("SELECT max(value) FROM sequences WHERE name = ?", (SEQUENCE_NAME,)).fetchone()[0] or 0


def origin(world) -> str:
    """FabricTarget.observation_origin of the world's store and space."""
    plan = load_answer(str(world.tmp / "state"))["plan"]
    with sqlite3.connect(world.tmp / "fabric.sqlite3") as db:
        (store_id,) = db.execute("SELECT value FROM meta WHERE key = 'storeId'").fetchone()
    return f"sqlite:{store_id} {plan['space']}"


def started_early(world, monkeypatch, version: str) -> int:
    append_a_line(world)  # the home changed: the early start starts its Codex
    for name, value in world.env().items():
        monkeypatch.setenv(name, value)
    before = observation_sequence(world)
    assert start_changed_homes([], os.environ, client_version=version) == 1
    (pid,) = codex_early.pid_of_started()
    assert observation_sequence(world) == before + 1, "its sequence allocated in the store"
    return pid


def listing(driver: CodexAppServerDriver) -> list:
    pages, cursor = [], None
    while True:
        page = driver.list_sessions(cursor)
        pages.append(([summary.model_dump() for summary in page.sessions], page.next_cursor))
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


def driver_of(world, page_size: int | None = None) -> CodexAppServerDriver:
    """A driver as sync's pool makes it: only collecting (its Codex on one CPU, as the
    early child is started)."""
    config = world.source.model_copy(update={"codex_bin": str(world.wrapper)})
    driver = CodexAppServerDriver(config) if page_size is None else CodexAppServerDriver(config, page_size=page_size)
    driver.collection_only = True
    return driver


def test_the_driver_takes_the_early_answers_when_the_run_lists_from_their_sequence(world, monkeypatch):
    pid = started_early(world, monkeypatch, _client_version())
    try:
        sequence = codex_early.take_sequence(SOURCE, lambda: origin(world))
        assert sequence == observation_sequence(world)
        assert codex_early.take_sequence(SOURCE, lambda: origin(world)) is None, "taken once"
        starts = world.starts()
        driver = driver_of(world)
        driver.start()
        try:
            assert driver.transport.pid == pid and world.starts() == starts, "the early child, adopted"
            assert driver.listing.asked_ahead >= 1, "its first pages came with it"
            # held as the lines Codex sent, parsed when taken (session 29): the listing below is the same
            assert type(driver.listing._asked[None].pending) is HeldBytes
            assert driver.source.provider_version, "the early `initialize` answer names Codex's version"
            early = listing(driver)
            notes = sorted(message.get("method") for message in driver.transport.retained_notifications())
        finally:
            driver.stop()
    finally:
        codex_early.discard()
    fresh = driver_of(world)  # the same listing, asked by a driver of its own
    fresh.start()
    try:
        assert listing(fresh) == early
        # what Codex sent besides the answers (its notifications) reached the transport too
        assert sorted(message.get("method") for message in fresh.transport.retained_notifications()) == notes
    finally:
        fresh.stop()


def test_without_its_sequence_taken_the_driver_adopts_the_child_and_lists_itself(world, monkeypatch):
    pid = started_early(world, monkeypatch, _client_version())
    try:
        driver = driver_of(world)
        driver.start()
        try:
            assert driver.transport.pid == pid
            assert driver.listing.asked_ahead == 0, "pages asked before a sequence this run did not take: dropped"
            assert listing(driver)[0][0], "it lists"
        finally:
            driver.stop()
    finally:
        codex_early.discard()


def test_pages_asked_with_another_page_size_are_not_given(world, monkeypatch):
    pid = started_early(world, monkeypatch, _client_version())
    try:
        assert codex_early.take_sequence(SOURCE, lambda: origin(world)) is not None
        driver = driver_of(world, page_size=2)
        driver.start()
        try:
            assert driver.transport.pid == pid and driver.listing.asked_ahead == 0
            pages = listing(driver)
            assert all(len(sessions) <= 2 for sessions, _cursor in pages)
        finally:
            driver.stop()
    finally:
        codex_early.discard()


def test_a_child_initialized_for_another_version_is_not_adopted_and_is_ended(world, monkeypatch):
    pid = started_early(world, monkeypatch, "0.0.0-another")
    driver = driver_of(world)
    driver.start()
    try:
        assert driver.transport.pid != pid and codex_early.started() == 0
        assert listing(driver)[0][0]
    finally:
        driver.stop()
        codex_early.discard()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return
    raise AssertionError(f"the early child {pid} was not ended and reaped")

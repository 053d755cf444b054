"""The Claude driver lists once per inventory (lib/drivers/claude_listing.py).

Over the real pinned SDK and fixture session files: the first page takes the whole
listing, later pages come from it, and a read that follows the listing uses the listed
summary; a session deleted or changed in between is still seen truthfully.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from lib.drivers.base import DriverError
from lib.drivers.claude_agent_sdk import ClaudeAgentSdkDriver
from lib.drivers.claude_listing import MAX_AGE, ListingSnapshot
from lib.types import AgentSourceConfig, SessionSummary
from tests.support.claude_home import (
    BASE,
    FixtureSession,
    FixtureTurn,
    make_config_dir,
    session_id,
    session_path,
    write_session,
)


def fixture_sessions(cwd: Path, count: int) -> list[FixtureSession]:
    cwd.mkdir(parents=True, exist_ok=True)
    return [
        FixtureSession(id=session_id(f"listing-{n}"), cwd=str(cwd), turns=(FixtureTurn(f"prompt {n}", f"answer {n}"),),
                       created_at=BASE + timedelta(minutes=n), updated_at=BASE + timedelta(minutes=n), branch=None)
        for n in range(count)
    ]


@pytest.fixture
def home(tmp_path):
    sessions = fixture_sessions(tmp_path / "work", 7)
    return make_config_dir(tmp_path / "config", sessions), sessions


def started(config_dir: Path, page_size: int = 3) -> ClaudeAgentSdkDriver:
    driver = ClaudeAgentSdkDriver(
        AgentSourceConfig(id="claude", driver="claude-agent-sdk", config_dir=str(config_dir)), page_size=page_size)
    driver.start()
    return driver


def test_a_session_written_between_pages_neither_shifts_nor_repeats_the_later_pages(home, tmp_path):
    config_dir, sessions = home
    driver = started(config_dir)
    first = driver.list_sessions(None)
    # A newer session appears: with the SDK's offset paging it would push one session
    # of the first page onto the second, listed twice.
    newer = FixtureSession(id=session_id("listing-newer"), cwd=sessions[0].cwd, turns=(FixtureTurn("new"),),
                           created_at=BASE + timedelta(days=1), updated_at=BASE + timedelta(days=1), branch=None)
    write_session(config_dir, newer)
    listed = [s.native_session_id for s in first.sessions]
    cursor = first.next_cursor
    while cursor is not None:
        page = driver.list_sessions(cursor)
        listed += [s.native_session_id for s in page.sessions]
        cursor = page.next_cursor
    assert listed == [s.id for s in reversed(sessions)]
    # The next inventory starts a new listing and sees it.
    assert driver.list_sessions(None).sessions[0].native_session_id == newer.id
    driver.stop()


def test_a_read_after_the_listing_gives_the_summary_a_fresh_driver_reads(home):
    config_dir, sessions = home
    driver, fresh = started(config_dir), started(config_dir)
    driver.list_sessions(None)
    target = sessions[-1].id  # on the first page
    assert driver.read_session(target).summary == fresh.read_session(target).summary
    assert driver.read_session(target).summary == fresh.read_session(target).summary  # second read: asks the SDK
    driver.stop()
    fresh.stop()


def test_a_session_deleted_after_the_listing_is_session_not_found(home):
    config_dir, sessions = home
    driver = started(config_dir)
    driver.list_sessions(None)
    os.unlink(session_path(config_dir, sessions[-1]))
    with pytest.raises(DriverError) as raised:
        driver.read_session(sessions[-1].id)
    assert raised.value.code == "session-not-found"
    driver.stop()


def test_a_session_grown_after_the_listing_is_read_whole(home):
    config_dir, sessions = home
    driver = started(config_dir)
    driver.list_sessions(None)
    grown = sessions[-1]
    grown = FixtureSession(id=grown.id, cwd=grown.cwd, turns=(*grown.turns, FixtureTurn("and more", "more")),
                           created_at=grown.created_at, updated_at=grown.updated_at + timedelta(hours=1), branch=None)
    write_session(config_dir, grown)
    snapshot = driver.read_session(grown.id)
    assert [m.text for m in snapshot.normalized_messages][-2:] == ["and more", "more"]
    driver.stop()


def test_a_cursor_from_another_listing_is_served_by_the_sdk_at_its_offset(home):
    config_dir, sessions = home
    driver = started(config_dir)
    page = driver.list_sessions("3")  # no listing in this driver: the SDK's own offset paging
    assert [s.native_session_id for s in page.sessions] == [s.id for s in reversed(sessions)][3:6]
    assert page.next_cursor == "6"
    driver.stop()


def _summary(sid: str) -> SessionSummary:
    return SessionSummary(native_session_id=sid)


class _Info:
    def __init__(self, sid: str) -> None:
        self.session_id = sid


def test_a_stale_listing_serves_no_pages_and_no_summaries():
    now = [0.0]
    listing = ListingSnapshot(clock=lambda: now[0])
    listing.replace([_Info("a"), _Info("b")])
    listing.listed([_summary("a"), _summary("b")])
    assert [i.session_id for i in listing.page(1, 5)] == ["b"]
    assert listing.take_summary("a") == _summary("a")
    assert listing.take_summary("a") is None  # once
    now[0] = MAX_AGE + 1
    assert listing.page(1, 5) is None
    assert listing.take_summary("b") is None


def test_a_finished_or_forgotten_listing_serves_nothing_more():
    listing = ListingSnapshot()
    listing.replace([_Info("a")])
    listing.listed([_summary("a")])
    listing.forget("a")
    assert listing.take_summary("a") is None
    listing.finish()
    assert listing.page(0, 5) is None

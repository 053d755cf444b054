"""The Claude driver's inventory and reads, over the real pinned Claude Agent SDK.

Every test reads a fixture `CLAUDE_CONFIG_DIR` (tests/support/claude_home.py) through
the SDK's own session functions: projects in a Git repository, its worktree, a
subdirectory, a look-alike sibling and unrelated directories, and one file the SDK
lists but cannot read.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from lib.drivers.base import Cancelled, CancelSignal, DriverError
from lib.drivers.claude_agent_sdk import CONFIG_DIR_VARIABLE, ClaudeAgentSdkDriver
from lib.drivers.registry import create_driver
from lib.types import PREVIEW_LIMIT, AgentSourceConfig
from tests.support.claude_home import (
    LONG_TEXT,
    ClaudeWorld,
    make_claude_world,
    make_config_dir,
    many_sessions,
)


def config(world: ClaudeWorld, **fields) -> AgentSourceConfig:
    return AgentSourceConfig(id=" Claude ", driver="claude-agent-sdk", config_dir=str(world.config_dir), **fields)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> ClaudeWorld:
    return make_claude_world(tmp_path_factory.mktemp("claude-world"))


@pytest.fixture
def driver(world):
    driver = ClaudeAgentSdkDriver(config(world), page_size=3)
    driver.start()
    yield driver
    driver.stop()


def list_all(driver) -> tuple[list, list]:
    cursors, sessions, cursor = [None], [], None
    while True:
        page = driver.list_sessions(cursor)
        sessions += page.sessions
        cursor = page.next_cursor
        if cursor is None:
            return sessions, cursors
        cursors.append(cursor)


def ids(driver) -> list[str]:
    return [s.native_session_id for s in list_all(driver)[0]]


# -- creation, capabilities --------------------------------------------------------


def test_the_registry_creates_the_claude_driver_with_every_command(world):
    driver = create_driver(config(world))
    assert isinstance(driver, ClaudeAgentSdkDriver)
    assert driver.source.id == "claude"
    caps = driver.source.capabilities
    assert caps.list_sessions and caps.read_session
    assert caps.prompt and caps.cancel and caps.rename_session and caps.set_mode and caps.set_config_option
    assert caps.start_session is True
    assert caps.modes == ["acceptEdits", "default", "dontAsk", "plan"]
    assert list(caps.config_options) == ["model"]


def test_bypass_permissions_is_advertised_only_with_allow_danger_full_access(world):
    assert "bypassPermissions" not in create_driver(config(world)).source.capabilities.modes
    allowed = create_driver(config(world, allow_danger_full_access=True)).source.capabilities.modes
    assert allowed == ["acceptEdits", "bypassPermissions", "default", "dontAsk", "plan"]


def test_start_reports_the_bundled_cli_version(driver):
    assert driver.source.provider_version == "2.1.332"


def test_a_cancelled_start_raises_cancelled(world):
    signal = CancelSignal()
    signal.cancel()
    with pytest.raises(Cancelled):
        ClaudeAgentSdkDriver(config(world)).start(signal)


def test_calls_before_start_and_after_stop_fail_with_a_code(world):
    driver = ClaudeAgentSdkDriver(config(world))
    with pytest.raises(DriverError) as before:
        driver.list_sessions()
    assert before.value.code == "driver-not-started"
    driver.start()
    driver.stop()
    with pytest.raises(DriverError) as after:
        driver.read_session(world.sessions[0].id)
    assert after.value.code == "driver-stopped"


# -- pages and cursors -------------------------------------------------------------


def test_pages_walk_every_session_newest_first_with_decimal_offset_cursors(driver, world):
    sessions, cursors = list_all(driver)
    assert cursors == [None, "3", "6"]
    listed = [s.native_session_id for s in sessions]
    assert len(listed) == len(set(listed)) == 9
    assert set(listed) == world.every_id()
    updated = [s.updated_at for s in sessions]
    assert updated == sorted(updated, reverse=True)


def test_a_full_last_page_ends_the_listing_without_an_empty_page(world):
    driver = ClaudeAgentSdkDriver(config(world), page_size=9)
    driver.start()
    page = driver.list_sessions()
    assert len(page.sessions) == 9 and page.next_cursor is None


def test_a_cursor_past_the_end_gives_an_empty_last_page(driver):
    page = driver.list_sessions("500")
    assert page.sessions == [] and page.next_cursor is None


@pytest.mark.parametrize("cursor", ["-1", "+3", "03", "3.0", " 3", "abc", "", "active:3"])
def test_a_cursor_that_is_not_a_decimal_offset_is_invalid(driver, cursor):
    with pytest.raises(DriverError) as caught:
        driver.list_sessions(cursor)
    assert caught.value.code == "invalid-cursor"


def test_pages_hold_100_sessions_by_default(tmp_path):
    project = tmp_path / "big"
    project.mkdir()
    config_dir = make_config_dir(tmp_path / "config", many_sessions(project, 230))
    driver = ClaudeAgentSdkDriver(AgentSourceConfig(id="claude", driver="claude-agent-sdk", config_dir=str(config_dir)))
    driver.start()
    sessions, cursors = list_all(driver)
    assert cursors == [None, "100", "200"]
    assert len({s.native_session_id for s in sessions}) == 230


# -- cwd scoping -------------------------------------------------------------------


def test_a_source_with_cwd_lists_the_project_and_its_worktrees_not_subdirectories_or_siblings(world):
    driver = ClaudeAgentSdkDriver(config(world, cwd=str(world.app)), page_size=2)
    driver.start()
    assert set(ids(driver)) == world.ids_in(world.app, world.feature)


def test_a_source_whose_cwd_is_the_worktree_lists_the_whole_repository(world):
    driver = ClaudeAgentSdkDriver(config(world, cwd=str(world.feature)))
    driver.start()
    assert set(ids(driver)) == world.ids_in(world.app, world.feature)


def test_a_source_whose_cwd_is_not_a_repository_lists_that_directory_only(world):
    driver = ClaudeAgentSdkDriver(config(world, cwd=str(world.app_old)))
    driver.start()
    assert set(ids(driver)) == world.ids_in(world.app_old)


def test_a_source_whose_cwd_has_no_sessions_lists_nothing(world, tmp_path):
    driver = ClaudeAgentSdkDriver(config(world, cwd=str(tmp_path)))
    driver.start()
    assert driver.list_sessions().sessions == []


def test_a_read_outside_the_sources_cwd_is_session_not_found(world):
    driver = ClaudeAgentSdkDriver(config(world, cwd=str(world.app)))
    driver.start()
    outside = world.by_name()["notes-tools"].id
    with pytest.raises(DriverError) as caught:
        driver.read_session(outside)
    assert caught.value.code == "session-not-found"
    # ... while one in its worktree reads
    assert driver.read_session(world.by_name()["feature"].id).summary.git_branch == "feature"


# -- summaries ---------------------------------------------------------------------


def test_summaries_carry_title_times_branch_and_directory(driver, world):
    summaries = {s.native_session_id: s for s in list_all(driver)[0]}
    named = world.by_name()
    titled = summaries[named["app-titled"].id]
    assert titled.title == "Invoice rounding"
    assert titled.cwd == str(world.app)
    assert titled.git_branch == "main"
    assert titled.created_at == "2026-03-02T09:00:00.000Z"
    assert titled.updated_at == "2026-03-02T09:30:00.000Z"
    assert titled.archived is None and titled.active is None
    assert titled.raw["tag"] == "billing" and titled.raw["session_id"] == named["app-titled"].id
    assert summaries[named["app-ai-titled"].id].title == "Slow test survey"
    assert summaries[named["feature"].id].git_branch == "feature"
    assert summaries[named["feature"].id].cwd == str(world.feature)
    # untitled: the SDK's display summary (its last, else first, prompt)
    assert summaries[named["pkg"].id].title == "Bump the package version."
    # Claude's "HEAD" (no repository, or detached) is no branch; a missing one is null
    assert summaries[named["app-old"].id].git_branch is None
    assert summaries[named["notes-tools"].id].git_branch is None


def test_an_untitled_sessions_title_is_the_sdks_one_line_shortened_prompt(driver, world):
    summaries = {s.native_session_id: s for s in list_all(driver)[0]}
    title = summaries[world.by_name()["notes-long"].id].title
    # the SDK itself folds the prompt onto one line and shortens it (200 characters and "…")
    assert title.startswith("Please look at this trace: 0123456789") and title.endswith("…")
    assert "\n" not in title and len(title) <= PREVIEW_LIMIT


def test_the_read_summary_matches_the_listed_one(driver, world):
    listed = {s.native_session_id: s for s in list_all(driver)[0]}
    for session in world.sessions:
        assert driver.read_session(session.id).summary == listed[session.id]


def test_active_is_true_only_for_a_prompt_this_driver_runs_and_never_false(driver, world):
    session = world.sessions[0].id
    assert all(s.active is None for s in list_all(driver)[0])
    driver._running[session] = 1  # what a running prompt of this driver registers
    try:
        listed = {s.native_session_id: s.active for s in list_all(driver)[0]}
        assert listed[session] is True
        assert {a for sid, a in listed.items() if sid != session} == {None}
        assert driver.read_session(session).summary.active is True
    finally:
        driver._running.clear()
    assert driver.read_session(session).summary.active is None


# -- reads: events and normalized messages ------------------------------------------


def test_events_are_the_sdk_messages_in_conversation_order(driver, world):
    session = world.by_name()["notes-tools"]
    snapshot = driver.read_session(session.id)
    assert snapshot.complete is True
    assert [e["uuid"] for e in snapshot.events] == session.message_ids()
    assert [e["type"] for e in snapshot.events] == ["user", "assistant", "user", "assistant"]
    first = snapshot.events[0]
    assert first == {"type": "user", "uuid": session.message_ids()[0], "session_id": session.id,
                     "message": {"role": "user", "content": "Count the notes."},
                     "parent_tool_use_id": None, "parent_agent_id": None}


def test_normalized_messages_map_types_roles_and_text(driver, world):
    session = world.by_name()["notes-tools"]
    messages = driver.read_session(session.id).normalized_messages
    assert [m.id for m in messages] == session.message_ids()
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert [m.kind for m in messages] == ["user", "assistant", "user", "assistant"]
    assert [m.text for m in messages] == ["Count the notes.", "Counting them.\nBash", "42", "There are 42 notes."]
    assert [m.event_index for m in messages] == [0, 1, 2, 3]
    assert all(m.timestamp is None for m in messages)  # the SDK's messages carry no time


def test_message_text_is_bounded_to_the_preview_limit(driver, world):
    messages = driver.read_session(world.by_name()["notes-long"].id).normalized_messages
    assert [m.text for m in messages] == [LONG_TEXT[:PREVIEW_LIMIT]] * 2


def test_an_unknown_session_is_session_not_found(driver):
    with pytest.raises(DriverError) as caught:
        driver.read_session("01a22a97-0000-4000-8000-000000000000")
    assert caught.value.code == "session-not-found"


def test_a_session_id_that_is_not_a_uuid_is_session_not_found(driver):
    with pytest.raises(DriverError) as caught:
        driver.read_session("../../etc/passwd")
    assert caught.value.code == "session-not-found"


def test_a_session_file_the_sdk_cannot_read_fails_that_read_only(driver, world):
    listed = ids(driver)
    assert world.unreadable.id in listed  # the SDK lists it (it reads heads leniently)
    with pytest.raises(DriverError) as caught:
        driver.read_session(world.unreadable.id)
    assert caught.value.code == "provider-error"
    assert "get_session_messages" in caught.value.message and "UnicodeDecodeError" in caught.value.message
    assert "broken file" not in caught.value.message  # the SDK's words are the detail only
    for session in world.sessions:  # every other read goes on
        assert driver.read_session(session.id).events


# -- the configuration directory and the environment -----------------------------------


def test_the_config_dir_never_leaks_into_the_environment(driver, world, monkeypatch):
    monkeypatch.setenv(CONFIG_DIR_VARIABLE, "/somewhere/else")
    list_all(driver)
    driver.read_session(world.sessions[0].id)
    with pytest.raises(DriverError):
        driver.read_session(world.unreadable.id)
    assert os.environ[CONFIG_DIR_VARIABLE] == "/somewhere/else"
    monkeypatch.delenv(CONFIG_DIR_VARIABLE)
    list_all(driver)
    assert CONFIG_DIR_VARIABLE not in os.environ


def test_two_sources_with_different_config_dirs_list_concurrently_without_mixing(world, tmp_path):
    project = tmp_path / "other"
    project.mkdir()
    other_dir = make_config_dir(tmp_path / "other-config", many_sessions(project, 5))
    first = ClaudeAgentSdkDriver(config(world), page_size=2)
    second = ClaudeAgentSdkDriver(
        AgentSourceConfig(id="claude2", driver="claude-agent-sdk", config_dir=str(other_dir)), page_size=2)
    first.start()
    second.start()
    expected = {id(first): world.every_id(), id(second): {s.id for s in many_sessions(project, 5)}}
    failures: list[str] = []

    def worker(driver) -> None:
        for _ in range(15):
            got = set(ids(driver))
            if got != expected[id(driver)]:
                failures.append(f"{driver.source.id}: {len(got)}")

    threads = [threading.Thread(target=worker, args=(d,)) for d in (first, second, first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_config_dir_can_come_from_the_sources_env(world):
    driver = ClaudeAgentSdkDriver(AgentSourceConfig(
        id="claude", driver="claude-agent-sdk", env={CONFIG_DIR_VARIABLE: str(world.config_dir)}))
    driver.start()
    assert set(ids(driver)) == world.every_id()


def test_a_config_dir_that_does_not_exist_lists_nothing(tmp_path):
    driver = ClaudeAgentSdkDriver(AgentSourceConfig(
        id="claude", driver="claude-agent-sdk", config_dir=str(Path(tmp_path, "missing"))))
    driver.start()
    assert driver.list_sessions().sessions == []

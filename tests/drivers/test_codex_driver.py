"""The Codex driver's inventory, reads, rename and start, over the real pinned `codex app-server`.

One real Codex process serves the module (its home holds fixture threads in the legacy
rollout format: active and archived, named and unnamed, two providers, an `exec` source).
The few fault cases a real Codex cannot show use the fake child and say so in their names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lib.drivers.base import Cancelled, CancelSignal, DriverError, DriverUnavailable
from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.drivers.codex_launch import plan_launch
from lib.drivers.jsonrpc_transport import RpcError
from lib.drivers.registry import create_driver
from lib.types import PREVIEW_LIMIT, AgentSourceConfig
from tests.support.codex_home import (
    FixtureThread,
    FixtureTurn,
    demo_threads,
    make_codex_home,
    uuid7_like,
)
from tests.support.fake_codex_child import child_argv

LONG_TEXT = "Please review this log:\n" + "0123456789" * 200
WHEN = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
LONG_THREAD = FixtureThread(
    id=uuid7_like(900, WHEN),
    created_at=WHEN,
    turns=(FixtureTurn(id=uuid7_like(901, WHEN), user=LONG_TEXT[24:], agent=LONG_TEXT),),
)
RENAME_THREAD = FixtureThread(
    id=uuid7_like(910, WHEN + timedelta(hours=1)),
    created_at=WHEN + timedelta(hours=1),
    turns=(FixtureTurn(id=uuid7_like(911, WHEN), user="Rename me later", agent="Sure."),),
)
THREADS = [*demo_threads(), LONG_THREAD, RENAME_THREAD]


def config(**fields) -> AgentSourceConfig:
    return AgentSourceConfig(id=" Codex ", driver="codex-app-server", **fields)


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return make_codex_home(tmp_path_factory.mktemp("codex-home"), THREADS)


@pytest.fixture(scope="module")
def driver(codex_bin, home) -> Iterator[CodexAppServerDriver]:
    driver = CodexAppServerDriver(config(codex_bin=codex_bin, codex_home=str(home)), page_size=2)
    try:
        driver.start()
        yield driver
    finally:
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


def by_id(driver):
    return {s.native_session_id: s for s in list_all(driver)[0]}


def test_listing_pages_through_active_threads_newest_first_then_archived_ones(driver):
    sessions, cursors = list_all(driver)
    active = sorted((t for t in THREADS if not t.archived), key=lambda t: t.created_at, reverse=True)
    archived = sorted((t for t in THREADS if t.archived), key=lambda t: t.created_at, reverse=True)
    assert [s.native_session_id for s in sessions] == [t.id for t in active + archived]
    assert [s.archived for s in sessions] == [False] * len(active) + [True] * len(archived)
    assert len(cursors) >= 4  # several pages of two
    switch = cursors.index("archived:")
    assert all(c.startswith("active:") and len(c) > len("active:") for c in cursors[1:switch])
    assert all(c.startswith("archived:") and len(c) > len("archived:") for c in cursors[switch + 1 :])


def test_threads_of_every_provider_and_source_kind_are_listed(driver):
    listed = by_id(driver)
    azure = next(t for t in THREADS if t.model_provider == "azure")
    exec_thread = next(t for t in THREADS if t.source == "exec")
    assert listed[azure.id].raw["modelProvider"] == "azure"
    assert listed[exec_thread.id].raw["source"] == "exec"


def test_summaries_carry_title_cwd_times_and_lifecycle(driver):
    listed = by_id(driver)
    named, unnamed = THREADS[0], THREADS[1]
    summary = listed[named.id]
    assert summary.title == "Fix rounding in invoice totals"
    assert summary.cwd == "/home/demo/src/billing"
    assert summary.created_at == "2026-02-10T14:00:00.000Z"
    assert summary.updated_at == "2026-02-10T14:30:00.000Z"  # the rollout file's mtime
    assert (summary.archived, summary.active) == (False, False)
    assert summary.raw["id"] == named.id and "turns" not in summary.raw
    # An unnamed thread is titled by the first line of its first prompt.
    assert listed[unnamed.id].title == "Why does the build warn about an unused import in nav.ts?"


def test_titles_are_bounded_to_500_characters(driver):
    assert len(by_id(driver)[LONG_THREAD.id].title) == PREVIEW_LIMIT


@pytest.mark.parametrize("cursor", ["garbage", "active:", "ARCHIVED:x", "2026-02-10T17:00:00Z|abc"])
def test_a_cursor_of_any_other_form_is_an_error(driver, cursor):
    with pytest.raises(DriverError) as caught:
        driver.list_sessions(cursor)
    assert caught.value.code == "invalid-cursor"


def test_a_read_gives_each_turn_whole_as_a_native_event_and_messages_in_order(driver):
    thread = next(t for t in THREADS if len(t.turns) == 3)
    snapshot = driver.read_session(thread.id)
    assert [event["id"] for event in snapshot.events] == [turn.id for turn in thread.turns]
    assert all(event["status"] == "completed" and event["items"] for event in snapshot.events)
    messages = snapshot.normalized_messages
    assert [(m.role, m.kind, m.text, m.event_index) for m in messages] == [
        (role, kind, text, index)
        for index, turn in enumerate(thread.turns)
        for role, kind, text in (("user", "userMessage", turn.user), ("assistant", "agentMessage", turn.agent))
    ]
    assert len({m.id for m in messages}) == len(messages)
    assert messages[0].timestamp == "2026-02-11T14:00:00.000Z"
    assert snapshot.complete is True
    assert snapshot.revision == f"initial:{thread.id}"
    assert snapshot.summary.title == thread.name
    assert snapshot.summary.archived is None  # only the listing knows; collection fills it in


def test_a_sized_read_is_the_same_snapshot_with_the_bytes_codex_answered(driver):
    thread = next(t for t in THREADS if len(t.turns) == 3)
    snapshot, size = driver.read_session_sized(thread.id)
    assert snapshot.model_dump(mode="json") == driver.read_session(thread.id).model_dump(mode="json")
    answer = driver.transport.request("thread/read", {"threadId": thread.id, "includeTurns": True})
    # the answer's line holds the result and the envelope: never less than the result alone
    assert size >= len(json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode())


def test_reads_asked_together_are_each_answered_as_a_read_alone(driver):
    # the read-ahead keeps several reads in flight (session 25): all asked before any is waited for
    answers = [(thread.id, driver.begin_read_session_sized(thread.id)) for thread in THREADS]
    taken = {thread_id: answer() for thread_id, answer in reversed(answers)}  # waited for in another order
    for thread in THREADS:
        snapshot, size = taken[thread.id]
        assert snapshot.model_dump(mode="json") == driver.read_session(thread.id).model_dump(mode="json")
        assert size > 0


def test_an_archived_thread_reads_like_any_other(driver):
    thread = next(t for t in THREADS if t.archived)
    snapshot = driver.read_session(thread.id)
    assert snapshot.normalized_messages[0].text == thread.turns[0].user
    assert snapshot.summary.active is False


def test_message_previews_are_bounded_to_500_characters(driver):
    messages = driver.read_session(LONG_THREAD.id).normalized_messages
    assert [len(m.text) for m in messages] == [PREVIEW_LIMIT, PREVIEW_LIMIT]
    assert messages[1].text == LONG_TEXT[:PREVIEW_LIMIT]


def test_reading_an_unknown_thread_is_a_provider_error(driver):
    with pytest.raises(DriverError) as caught:
        driver.read_session(uuid7_like(12345, WHEN))
    assert caught.value.code == "provider-error"
    assert "thread not loaded" in caught.value.message


def test_a_started_thread_without_turns_reads_as_a_complete_snapshot_without_events(driver, tmp_path):
    started = driver.transport.request("thread/start", {"cwd": str(tmp_path)})
    with pytest.raises(RpcError) as caught:  # what the driver works around
        driver.transport.request("thread/read", {"threadId": started["thread"]["id"], "includeTurns": True})
    assert caught.value.rpc_code == -32601
    snapshot = driver.read_session(started["thread"]["id"])
    assert snapshot.events == [] and snapshot.normalized_messages == []
    assert snapshot.complete is True
    assert snapshot.summary.native_session_id == started["thread"]["id"]


def test_a_renamed_thread_lists_and_reads_with_its_new_title(driver):
    result = driver.rename_session(RENAME_THREAD.id, "Renamed by agentctl")
    assert result.status == "succeeded"
    assert by_id(driver)[RENAME_THREAD.id].title == "Renamed by agentctl"
    assert driver.read_session(RENAME_THREAD.id).summary.title == "Renamed by agentctl"


def test_renaming_an_unknown_thread_fails_with_codexs_reason(driver):
    result = driver.rename_session(uuid7_like(777, WHEN), "Nope")
    assert result.status == "failed"
    assert result.error.code == "provider-error"
    assert "no rollout found" in result.error.message


def test_set_mode_and_set_config_option_are_unsupported(driver):
    assert driver.set_mode(THREADS[0].id, "plan").status == "unsupported"
    assert driver.set_config_option(THREADS[0].id, "model", "x").status == "unsupported"
    assert driver.start_session(THREADS[0].id, None).status == "unsupported"


def test_cancel_without_a_turn_started_here_fails_and_touches_nothing(driver):
    result = driver.cancel(THREADS[0].id)
    assert (result.status, result.error.code) == ("failed", "no-active-turn")


def test_the_descriptor_names_the_normalized_source_codex_version_and_capabilities(driver):
    assert driver.source.id == "codex"
    assert driver.source.provider_version == "0.169.0"
    caps = driver.source.capabilities
    assert (caps.list_sessions, caps.read_session, caps.prompt, caps.cancel, caps.rename_session) == (
        True, True, True, True, True)
    assert (caps.set_mode, caps.set_config_option, caps.start_session) == (False, False, None)


def test_the_registry_creates_this_driver_for_codex_app_server():
    assert isinstance(create_driver(config()), CodexAppServerDriver)


def test_stop_then_start_serves_the_same_inventory_again(codex_bin, home):
    driver = CodexAppServerDriver(config(codex_bin=codex_bin, codex_home=str(home)))
    try:
        driver.start()
        first = [s.native_session_id for s in driver.list_sessions().sessions]
        driver.stop()
        with pytest.raises(DriverError):
            driver.list_sessions()
        driver.start()
        assert [s.native_session_id for s in driver.list_sessions().sessions] == first
    finally:
        driver.stop()


def test_an_invalid_codex_config_fails_the_start_with_codexs_own_reason_as_detail(codex_bin, tmp_path):
    (tmp_path / "config.toml").write_text('approval_policy = "untrusted"\n')
    driver = CodexAppServerDriver(config(codex_bin=codex_bin, codex_home=str(tmp_path)))
    try:
        with pytest.raises(DriverError) as caught:
            driver.start()
    finally:
        driver.stop()
    assert caught.value.code == "start-failed"
    assert 'approval_policy = "untrusted" is no longer supported' not in caught.value.message
    assert 'approval_policy = "untrusted" is no longer supported' in caught.value.detail


def test_a_missing_program_is_reported_with_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CODEX_BIN", raising=False)
    for driver_config in (config(), config(codex_bin=str(tmp_path / "nowhere" / "codex"))):
        with pytest.raises(DriverUnavailable) as caught:
            CodexAppServerDriver(driver_config).start()
        assert caught.value.code == "program-not-found"
        assert "@openai/codex" in caught.value.message and "codexBin" in caught.value.message


def executable(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_the_program_is_codex_bin_then_codex_bin_variable_then_codex_on_path(tmp_path):
    on_path = executable(tmp_path / "path" / "codex")
    from_env = executable(tmp_path / "env" / "codex")
    from_config = executable(tmp_path / "config" / "codex")
    environ = {"PATH": str(tmp_path / "path"), "CODEX_BIN": from_env}
    assert plan_launch(config(codex_bin=from_config), environ).argv[0] == from_config
    assert plan_launch(config(), environ).argv[0] == from_env
    assert plan_launch(config(), {"PATH": str(tmp_path / "path")}).argv[0] == on_path


def test_each_mode_derives_its_command_and_framing(tmp_path):
    program = executable(tmp_path / "codex")
    environ = {"PATH": str(tmp_path)}
    stdio = plan_launch(config(), environ)
    assert (stdio.argv[1:], stdio.framing, stdio.daemon_argv) == (
        ["app-server", "--listen", "stdio://"], "lines", None)
    managed = plan_launch(config(codex_transport="managed"), environ)
    assert managed.daemon_argv == [program, "app-server", "daemon", "start"]
    assert (managed.argv, managed.framing) == ([program, "app-server", "proxy"], "websocket")
    proxy = plan_launch(config(codex_transport="proxy", codex_socket="/run/x.sock"), environ)
    assert (proxy.argv, proxy.daemon_argv) == ([program, "app-server", "proxy", "--sock", "/run/x.sock"], None)
    verbatim = plan_launch(config(codex_transport="managed", command=["my-codex", "--flag"]), environ)
    assert (verbatim.argv, verbatim.daemon_argv, verbatim.framing) == (["my-codex", "--flag"], None, "websocket")


def test_fake_child_from_an_explicit_command_gets_codex_home_and_source_env_but_we_do_not(tmp_path):
    driver = CodexAppServerDriver(config(
        command=child_argv(), codex_home=str(tmp_path / "home"), env={"AGENTCTL_TEST_MARK": "yes"},
        cwd=str(tmp_path),
    ))
    try:
        driver.start()
        seen = driver.transport.request("env/get")
    finally:
        driver.stop()
    assert seen["env"]["CODEX_HOME"] == str(tmp_path / "home")
    assert seen["env"]["AGENTCTL_TEST_MARK"] == "yes"
    assert os.path.samefile(seen["cwd"], tmp_path)
    assert "AGENTCTL_TEST_MARK" not in os.environ
    assert os.environ.get("CODEX_HOME") != str(tmp_path / "home")


def test_fake_child_that_never_answers_lets_a_cancelled_start_end_and_leaves_no_child():
    driver = CodexAppServerDriver(config(command=child_argv("silent")))
    signal = CancelSignal()
    signal.cancel()
    with pytest.raises(Cancelled):
        driver.start(signal)
    assert not driver.transport.running and driver.transport.pid is None


def test_fake_child_approval_requests_are_declined_and_other_server_requests_refused():
    driver = CodexAppServerDriver(config(command=child_argv()))
    try:
        driver.start()
        approval = driver.transport.request("ask/me")["reply"]
        other = driver.transport.request("ask/unknown")["reply"]
    finally:
        driver.stop()
    assert approval == {"jsonrpc": "2.0", "id": 0, "result": {"decision": "decline"}}
    assert other["error"]["code"] == -32601
    assert "item/tool/call is not supported" in other["error"]["message"]

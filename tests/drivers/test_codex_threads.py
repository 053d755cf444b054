"""Codex thread objects to summaries, snapshots and cursors: the mapping on its own.

These cases use hand-built thread objects in the shapes the research recorded, for item
types and values that fixture rollouts cannot make the real Codex produce (tool items,
reasoning, millisecond times, a `systemError` status).
"""

from __future__ import annotations

import pytest

from lib.drivers.base import DriverError
from lib.drivers.codex_threads import (
    iso_time,
    lifecycle_active,
    next_cursor,
    parse_cursor,
    rollout_bytes,
    snapshot_from_read,
    summary_from_thread,
)


def test_seconds_and_milliseconds_give_the_same_iso_time():
    assert iso_time(1796010903) == "2026-11-30T03:55:03.000Z"
    assert iso_time(1796010903123) == "2026-11-30T03:55:03.123Z"
    assert iso_time(None) is None and iso_time("soon") is None and iso_time(True) is None


@pytest.mark.parametrize(
    ("status", "active"),
    [
        ({"type": "active", "activeFlags": ["waitingOnApproval"]}, True),
        ({"type": "idle"}, False),
        ({"type": "notLoaded"}, False),
        ({"type": "systemError"}, False),
        ({"type": "somethingNew"}, None),
        (None, None),
    ],
)
def test_thread_status_maps_to_the_active_lifecycle_flag(status, active):
    assert lifecycle_active({"id": "t", "status": status}) is active


def test_cursors_round_trip_through_the_three_forms():
    assert parse_cursor(None) == (False, None)
    assert parse_cursor("active:2026-01-01T00:00:00Z|abc") == (False, "2026-01-01T00:00:00Z|abc")
    assert parse_cursor("archived:") == (True, None)
    assert parse_cursor("archived:x|y") == (True, "x|y")
    assert next_cursor(False, "p") == "active:p"
    assert next_cursor(False, None) == "archived:"
    assert next_cursor(True, "p") == "archived:p"
    assert next_cursor(True, None) is None
    with pytest.raises(DriverError):
        parse_cursor("")


def test_tool_and_other_items_become_tool_and_other_messages_of_their_turn():
    turns = [
        {"id": "turn-a", "startedAt": 1796010903, "itemsView": "full", "items": [
            {"type": "userMessage", "id": "u1", "content": [
                {"type": "text", "text": "Run the tests"}, {"type": "image", "url": "x"}]},
            {"type": "reasoning", "id": "r1", "summary": ["Plan: run pytest"], "content": []},
            {"type": "commandExecution", "id": "c1", "command": "pytest -q", "startedAtMs": 1796010904500},
            {"type": "agentMessage", "id": "a1", "text": "All green."},
        ]},
        {"id": "turn-b", "items": [{"type": "agentMessage", "id": "a1", "text": "Same id again"}]},
    ]
    snapshot = snapshot_from_read({"thread": {"id": "t", "turns": turns}}, with_turns=True)
    assert [(m.id, m.role, m.kind, m.text, m.event_index) for m in snapshot.normalized_messages] == [
        ("u1", "user", "userMessage", "Run the tests", 0),
        ("r1", "other", "reasoning", "Plan: run pytest", 0),
        ("c1", "tool", "commandExecution", "pytest -q", 0),
        ("a1", "assistant", "agentMessage", "All green.", 0),
        ("turn-b/a1", "assistant", "agentMessage", "Same id again", 1),
    ]
    assert snapshot.normalized_messages[0].timestamp == "2026-11-30T03:55:03.000Z"  # the turn's
    assert snapshot.normalized_messages[2].timestamp == "2026-11-30T03:55:04.500Z"  # the item's
    assert snapshot.events == turns


def test_a_turn_read_without_its_full_items_makes_the_snapshot_incomplete():
    turns = [{"id": "turn-a", "itemsView": "summary", "items": []}]
    assert snapshot_from_read({"thread": {"id": "t", "turns": turns}}, with_turns=True).complete is False


def test_a_read_without_a_thread_is_a_provider_error():
    with pytest.raises(DriverError) as caught:
        snapshot_from_read({}, with_turns=True)
    assert caught.value.code == "provider-error"


@pytest.mark.parametrize(
    ("origin", "published"),
    [
        ("user:s3cretPW@host:repo.git", "host:repo.git"),
        ("https://host/x.git?private_token=PLANTEDQUERY", "https://host/x.git"),
        ("/srv/git/local.git", None),
        (17, None),
    ],
)
def test_the_origin_url_codex_recorded_loses_its_credentials_in_the_raw_thread(origin, published):
    thread = {"id": "t1", "gitInfo": {"sha": "a" * 40, "branch": "main", "originUrl": origin}, "turns": []}

    raw = summary_from_thread(thread, archived=False).raw

    assert raw["gitInfo"] == {"sha": "a" * 40, "branch": "main", "originUrl": published}
    assert thread["gitInfo"]["originUrl"] == origin  # the provider's own object is not changed
    assert "turns" not in raw


def test_a_threads_read_size_hint_is_its_rollout_files_size(tmp_path):
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_bytes(b"x" * 12345)
    listed = summary_from_thread({"id": "t1", "path": str(rollout)}, archived=False)
    assert rollout_bytes(listed) == 12345
    assert rollout_bytes(summary_from_thread({"id": "t2", "path": str(tmp_path / "gone")}, archived=False)) is None
    assert rollout_bytes(summary_from_thread({"id": "t3"}, archived=False)) is None

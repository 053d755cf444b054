"""The Claude mapping (lib/drivers/claude_sessions.py) on the SDK's own record types.

Its fast paths (instance dicts for records, integer arithmetic for times, one validation
for a read's messages) must give exactly what the plain versions gave; and the adapter's
`CLAUDE_CONFIG_DIR` switch, which skips the change when the variable already holds the
value, still gives every SDK call the source's directory and leaves the variable as it was.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import random
import subprocess

from claude_agent_sdk.types import SDKSessionInfo, SessionMessage
from pydantic import ValidationError, field_validator

from lib.drivers.claude_sdk_adapter import CONFIG_DIR_VARIABLE, ClaudeSdkAdapter
from lib.drivers.claude_sessions import (
    message_event,
    message_events,
    normalized_messages,
    summaries,
    summary_fields,
    summary_from_info,
)
from lib.drivers.codex_threads import iso_time
from lib.types import (
    PREVIEW_LIMIT,
    MessageRole,
    NativeSessionSnapshot,
    NormalizedMessage,
    WireModel,
    preview,
)
from tests.support.claude_home import make_config_dir, many_sessions


def _times() -> list[object]:
    edges = [0, 1, -1, 10**11, 10**11 + 1, 2**32 * 1000 - 1, 2**32 * 1000, 253402300799999, 253402300800000,
             1772459940000, 1772459940999, 1796010903123, -10**13, 1.5e12, 1772459940123.0, True, None, "soon"]
    rng = random.Random(20261201)
    return edges + [rng.randrange(10**11, 2**32 * 1000) for _ in range(2000)] + [rng.randrange(-10**15, 10**15) for _ in range(500)]


def test_summary_times_are_exactly_iso_time_of_the_sdks_milliseconds():
    for value in _times():
        info = SDKSessionInfo(session_id="s", summary="x", last_modified=value, created_at=value)  # type: ignore[arg-type]
        summary = summary_from_info(info)
        assert summary.updated_at == iso_time(value) and summary.created_at == iso_time(value), value
    different = summary_from_info(SDKSessionInfo(session_id="s", summary="x", last_modified=1772459940123,
                                                 created_at=1772459940000))
    assert (different.created_at, different.updated_at) == ("2026-03-02T13:59:00.000Z", "2026-03-02T13:59:00.123Z")


def test_events_are_each_messages_fields_in_field_order_as_the_records_own_dicts():
    messages = [SessionMessage(type="user", uuid=f"u{n}", session_id="s", message={"content": f"m{n}"}) for n in range(3)]
    events = message_events(messages)
    names = [field.name for field in dataclasses.fields(SessionMessage)]
    for message, event in zip(messages, events, strict=True):
        assert list(event) == names
        assert event == {name: getattr(message, name) for name in names}
        # The record's own dict (the SDK drops its records), equal to message_event's copy.
        assert event is vars(message) and event == message_event(message) and message_event(message) is not event
    assert message_events([{"type": "user"}]) == [{"type": "user"}]


def test_normalized_messages_map_ids_roles_and_text_of_every_content_shape():
    events = [
        {"type": "user", "uuid": "a", "message": {"content": "plain"}},
        {"type": "user", "uuid": "a", "message": {"content": [{"type": "tool_result", "content": "42"}]}},
        {"type": "assistant", "uuid": "b", "message": {"content": [{"type": "text", "text": "y" * (PREVIEW_LIMIT + 9)}]}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "one"}, {"type": "tool_use", "name": "Bash"},
                                                      {"type": "image"}, "raw"]}},
        {"type": 7, "uuid": 8, "message": "not a body"},
        {},
    ]
    got = [(m.id, m.role, m.kind, m.text, m.event_index, m.timestamp) for m in normalized_messages(events)]
    assert got == [
        ("a", "user", "user", "plain", 0, None),
        ("a/1", "tool", "user", "42", 1, None),
        ("b", "assistant", "assistant", "y" * PREVIEW_LIMIT, 2, None),
        ("message-3", "assistant", "assistant", "one\nBash\nraw", 3, None),
        ("8", "other", "7", "", 4, None),
        ("message-5", "other", "unknown", "", 5, None),
    ]
    assert normalized_messages([]) == []


class _PythonValidatedMessage(WireModel):
    """NormalizedMessage as it was: `text` bounded by a Python `preview` validator."""

    id: str
    parent_id: str | None = None
    role: MessageRole
    kind: str
    timestamp: str | None = None
    text: str = ""
    event_index: int

    @field_validator("text")
    @classmethod
    def _preview_is_bounded(cls, value: str) -> str:
        return preview(value)


def test_a_normalized_messages_text_is_bounded_and_refused_exactly_as_by_the_python_preview_validator():
    class Sub(str):
        pass

    class Named(enum.StrEnum):
        A = "named"

    texts: list[object] = ["", "a", " ", "x" * (PREVIEW_LIMIT - 1), "y" * PREVIEW_LIMIT, "z" * (PREVIEW_LIMIT + 1),
                           "w" * 10_000, "é" * 600 + "\U0001f600", Sub("s" * 700), Sub("short"), Named.A,
                           b"bytes", bytearray(b"b" * 600), None, 7, 1.5, ["list"], {"text": "x"}]
    for text in texts:
        fields = {"id": "m", "role": "user", "kind": "user", "text": text, "eventIndex": 0}
        for strict in (False, True):
            try:
                expected: object = _PythonValidatedMessage.model_validate(fields, strict=strict).text
            except ValidationError as exc:
                expected = exc.errors(include_url=False)
            try:
                got: object = NormalizedMessage.model_validate(fields, strict=strict).text
            except ValidationError as exc:
                got = exc.errors(include_url=False)
            assert got == expected and type(got) is type(expected), (text, strict)
    many = NativeSessionSnapshot.model_validate({"summary": {"nativeSessionId": "s"}, "normalizedMessages": [
        {"id": str(n), "role": "user", "kind": "user", "text": "t" * n, "eventIndex": n} for n in range(495, 506)]})
    assert [len(m.text) for m in many.normalized_messages] == [495, 496, 497, 498, 499] + [PREVIEW_LIMIT] * 6


def test_sdk_calls_see_the_sources_config_dir_whatever_the_environment_held_and_leave_it_as_it_was(
        tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    config_dir = make_config_dir(tmp_path / "config", many_sessions(project, 2))
    adapter = ClaudeSdkAdapter(str(config_dir))
    for held in (str(config_dir), "/somewhere/else", None):  # the same value: nothing to set or restore
        if held is None:
            monkeypatch.delenv(CONFIG_DIR_VARIABLE, raising=False)
        else:
            monkeypatch.setenv(CONFIG_DIR_VARIABLE, held)
        infos = adapter.list_sessions(limit=None, offset=0, directory=None)
        assert len(infos) == 2
        assert len(adapter.get_session_messages(infos[0].session_id, None)) == 2
        assert os.environ.get(CONFIG_DIR_VARIABLE) == held


def test_a_pages_summaries_validated_as_one_list_are_exactly_each_summary_from_info():
    infos = [SDKSessionInfo(session_id=f"s{n}", summary=f"first\nsecond {n}", last_modified=1772459940123 + n,
                            created_at=1772459940000, cwd="/w" if n % 2 else "", git_branch=("HEAD", "main", None)[n % 3],
                            custom_title="  \n mine " if n == 1 else None) for n in range(6)]
    fields = [summary_fields(info, active=n == 2, started_as="c" if n == 3 else None) for n, info in enumerate(infos)]
    page = summaries(fields)
    for n, (info, summary) in enumerate(zip(infos, page, strict=True)):
        alone = summary_from_info(info, active=n == 2, started_as="c" if n == 3 else None)
        assert summary.model_dump() == alone.model_dump() and summary.model_fields_set == alone.model_fields_set
        assert summary.raw == dataclasses.asdict(info) and summary.raw is not vars(info)  # validation copied it
    assert [s.title for s in page[:2]] == ["first", "mine"] and page[2].active is True and page[3].started_as == "c"


def test_the_config_dir_switch_sets_the_mapping_and_the_c_environment_and_puts_both_back(tmp_path, monkeypatch):
    """What a child process started during an SDK call inherits (the C environment) and
    what the SDK reads (`os.environ`) both hold the source's directory, and both are as
    they were afterwards, whether the variable was absent or held another value."""
    adapter = ClaudeSdkAdapter(str(tmp_path))
    def seen() -> tuple[str | None, str]:
        child = subprocess.run(["sh", "-c", f'printf %s "${{{CONFIG_DIR_VARIABLE}-unset}}"'],
                               capture_output=True, text=True, check=True)
        return os.environ.get(CONFIG_DIR_VARIABLE), child.stdout
    for held in (None, "/somewhere/else"):
        if held is None:
            monkeypatch.delenv(CONFIG_DIR_VARIABLE, raising=False)
        else:
            monkeypatch.setenv(CONFIG_DIR_VARIABLE, held)
        assert adapter._call(seen) == (str(tmp_path), str(tmp_path))
        assert seen() == (held, held if held is not None else "unset")

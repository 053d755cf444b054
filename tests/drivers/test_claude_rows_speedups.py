"""lib._claude_rows (lib/_claude_rows.c) against its pure-Python references in
lib/drivers/claude_sessions.py: the same values of the same types, in the same key
order, for every shape the references handle; None (the reference then runs) for
anything that is not plain JSON of exact types.

Inputs: the real SDK's records of the 300 bench sessions and of the shared fixture
world, hand-written edge cases, and a few thousand random JSON events and summaries.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import claude_agent_sdk as sdk
import pytest
from claude_agent_sdk.types import SDKSessionInfo, SessionMessage

from lib.drivers import claude_sessions
from lib.drivers.claude_sessions import (
    ROWS,
    message_events,
    normalized_rows,
    reference_message_events,
    reference_normalized_rows,
    reference_summary_fields,
    summary_fields,
)
from lib.types import PREVIEW_LIMIT
from tests.bench.claude_bench import bench_sessions
from tests.support.claude_home import make_claude_world, make_config_dir

pytestmark = pytest.mark.skipif(ROWS is None, reason="lib._claude_rows is not built (no C compiler at install)")


class Sub(str):
    pass


class SubDict(dict):
    pass


def typed(value: Any) -> Any:
    """A value with the exact type of every part, and dicts' key order, made comparable."""
    if isinstance(value, dict):
        return (type(value), [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value), [typed(v) for v in value])
    return (type(value), value)


def same(got: Any, want: Any) -> None:
    assert typed(got) == typed(want)


def c_rows(events: list[Any]) -> list[dict[str, Any]] | None:
    return ROWS.normalized_rows(events)


def c_summary(info: Any, active: bool, started_as: str | None) -> dict[str, Any] | None:
    return ROWS.summary_fields(info, type(info), len(dataclasses.fields(type(info))), active, started_as)


def _read_everything(config_dir, monkeypatch) -> tuple[list[Any], list[list[Any]]]:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    infos = sdk.list_sessions()
    reads = []
    for info in infos:
        try:
            reads.append(sdk.get_session_messages(info.session_id))
        except Exception:  # the fixture world's unreadable session
            continue
    return infos, reads


def _check_records(infos: list[Any], reads: list[list[Any]]) -> int:
    checked = 0
    for info in infos:
        for active, started_as in ((False, None), (True, "desktop-start")):
            fields = c_summary(info, active, started_as)
            assert fields is not None, info
            same(fields, reference_summary_fields(info, active=active, started_as=started_as))
            assert fields["raw"] is vars(info)
            same(summary_fields(info, active=active, started_as=started_as), fields)
    for messages in reads:
        events = ROWS.record_dicts(messages, SessionMessage, len(dataclasses.fields(SessionMessage)))
        assert events is not None and all(e is vars(m) for e, m in zip(events, messages, strict=True))
        assert message_events(messages) == events and reference_message_events(messages) == events
        rows = c_rows(events)
        assert rows is not None
        same(rows, reference_normalized_rows(events))
        checked += len(rows)
    return checked


def test_the_bench_sessions_records_map_to_the_references_values(tmp_path, monkeypatch):
    config_dir = make_config_dir(tmp_path / "config", bench_sessions(tmp_path / "work", 300))
    infos, reads = _read_everything(config_dir, monkeypatch)
    assert len(infos) == 300 and _check_records(infos, reads) == 1800


def test_the_fixture_worlds_records_map_to_the_references_values(tmp_path, monkeypatch):
    world = make_claude_world(tmp_path)
    infos, reads = _read_everything(world.config_dir, monkeypatch)
    assert len(infos) >= 8 and _check_records(infos, reads) > 0


EDGE_EVENTS: list[dict[str, Any]] = [
    {"type": "user", "uuid": "a", "message": {"content": "plain"}},
    {"type": "user", "uuid": "a", "message": {"content": [{"type": "tool_result", "content": "42"}]}},
    {"type": "user", "uuid": "a", "message": {"content": [{"type": "tool_result", "content": [
        {"type": "text", "text": "nested"}, {"type": "image"}, {"type": "text", "text": "two"}]}]}},
    {"type": "user", "uuid": "t", "message": {"content": [{"type": "tool_result"}, {"type": "text", "text": "x"}]}},
    {"type": "user", "uuid": "t2", "message": {"content": [{"type": "tool_result"}, "bare"]}},
    {"type": "user", "uuid": "e", "message": {"content": []}},
    {"type": "assistant", "uuid": "b", "message": {"content": [{"type": "text", "text": "y" * (PREVIEW_LIMIT + 9)}]}},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "one"}, {"type": "tool_use", "name": "Bash"},
                                                  {"type": "image"}, "raw"]}},
    {"type": "assistant", "uuid": "th", "message": {"content": [{"type": "thinking", "thinking": "hmm"},
                                                                {"type": "text", "text": "said"}]}},
    {"type": "assistant", "uuid": "th1", "message": {"content": [{"type": "thinking", "thinking": "only"}]}},
    {"type": "assistant", "uuid": "img", "message": {"content": [{"type": "image", "source": {"data": "…"}}]}},
    {"type": "assistant", "uuid": "n", "message": {"content": [{"type": "text", "text": None}]}},
    {"type": "assistant", "uuid": "n2", "message": {"content": [{"type": "text", "text": 5}]}},
    {"type": "assistant", "uuid": "n3", "message": {"content": [{"type": "text", "text": 0.5}, {"type": "tool_use", "name": True}]}},
    {"type": "assistant", "uuid": "n4", "message": {"content": [{"type": "text", "text": ""}, {"type": "text"}]}},
    {"type": "assistant", "uuid": "n5", "message": {"content": [{"text": "no type"}, {"type": None}, {"type": 3}]}},
    {"type": "assistant", "uuid": "d", "message": {"content": {"type": "text", "text": "a dict"}}},
    {"type": "assistant", "uuid": "i", "message": {"content": 12}},
    {"type": "assistant", "uuid": "nc", "message": {}},
    {"type": "assistant", "uuid": "nm"},
    {"type": "assistant", "uuid": "", "message": None},
    {"type": "", "uuid": None, "message": {"content": "kindless"}},
    {"type": 7, "uuid": 8, "message": "not a body"},
    {"type": True, "uuid": 1.5, "message": []},
    {"type": "system", "uuid": "s", "message": {"content": "sys"}},
    {"type": "system", "uuid": "s", "message": {"content": [{"type": "text", "text": "sys2"}]}},
    {"type": "user", "uuid": "ü-ñ", "message": {"content": "ünïcödé\u2028line"}},
    {"type": "user", "uuid": "s/26", "message": {"content": "collides with the next"}},
    {"type": "user", "uuid": "s", "message": {"content": "dup"}},
    {},
]


def test_edge_events_map_to_the_references_rows_in_c():
    rows = c_rows(EDGE_EVENTS)
    assert rows is not None
    same(rows, reference_normalized_rows(EDGE_EVENTS))
    same(normalized_rows(EDGE_EVENTS), rows)
    assert c_rows([]) == [] and normalized_rows([]) == []


@pytest.mark.parametrize("odd", [
    {"type": Sub("user"), "message": {"content": "x"}},
    {"type": "user", "uuid": Sub("u"), "message": {"content": "x"}},
    {"type": "user", "message": {"content": Sub("x")}},
    {"type": "user", "message": SubDict(content="x")},
    {"type": "user", "message": {"content": [SubDict(type="text", text="x")]}},
    {"type": "user", "message": {"content": [{"type": "text", "text": Sub("x")}]}},
    {"type": "user", "message": {"content": [{"type": "tool_use", "name": object()}]}},
    {"type": "user", "message": {"content": [{"type": "tool_result", "content": [Sub("x")]}]}},
    {"type": ["a list"], "message": {"content": "x"}},
    {"type": "user", "uuid": {"a": "dict"}, "message": {"content": "x"}},
    {"type": "user", "message": {"content": [{"type": "text", "text": ["listed"]}]}},
    {"type": "user", "message": object()},
    {"type": "user", "message": {"content": object()}},
    SubDict(type="user"),
], ids=lambda odd: repr(odd)[:40])
def test_anything_but_plain_json_is_left_to_the_reference(odd):
    events = [{"type": "user", "uuid": "first", "message": {"content": "fine"}}, odd]
    assert c_rows(events) is None
    same(normalized_rows(events), reference_normalized_rows(events))


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(12 if depth < 3 else 7)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False, 0, 1, -3, 0.0, 2.5])
    if pick < 7:
        return rng.choice(["", " ", "text", "tool_use", "tool_result", "user", "assistant", "a\nb", "ü", "x" * 600])
    if pick < 10:
        return [_random_block(rng, depth + 1) for _ in range(rng.randrange(4))]
    return _random_block(rng, depth + 1)


def _random_block(rng: random.Random, depth: int) -> Any:
    if rng.random() < 0.2:
        return _random_scalar(rng)
    block: dict[str, Any] = {}
    for key in rng.sample(["type", "text", "name", "content"], rng.randrange(5)):
        block[key] = (rng.choice(["text", "tool_use", "tool_result", "image", "", None, 4])
                      if key == "type" else _random_json(rng, depth) if key == "content" else _random_scalar(rng))
    return block


def _random_scalar(rng: random.Random) -> Any:
    return rng.choice([None, True, False, 0, 7, 1.25, "", "word", "two\nlines", "é"])


def test_random_json_events_map_to_the_references_rows_in_c():
    rng = random.Random(20261202)
    for _ in range(300):
        events = []
        for _ in range(rng.randrange(8)):
            event: dict[str, Any] = {}
            for key in rng.sample(["type", "uuid", "message", "session_id"], rng.randrange(5)):
                if key == "message":
                    event[key] = rng.choice([None, "body", {"content": _random_json(rng)}, {}, {"content": None}])
                elif key == "uuid":
                    event[key] = rng.choice([None, "", "u", "u/1", 3, 0, True, 2.0])
                else:
                    event[key] = rng.choice(["user", "assistant", "", None, 0, 9, False, "system"])
            events.append(event)
        rows = c_rows(events)
        assert rows is not None, events
        same(rows, reference_normalized_rows(events))


def _infos() -> list[Any]:
    titles = [None, "", "  ", "one line", "  first\n second", "\n\n\t\x1f x \x1f\t", "a\r\nb", "\rlead", "\x0b\x0cv",
              "\x1c\x1d\x1e sep", "x" * (PREVIEW_LIMIT + 5), " " + "y" * (PREVIEW_LIMIT + 5) + " \n", "ü line\u2028next",
              "\u2029\u3000 wide \u3000\nz", "\x85nel", "é" * 700, "a\x1fb"]
    times = [None, 10**11 + 1, 1772459940123, 1772459940000, 2**32 * 1000 - 1, 86_400_000 * 11017,
             951_782_400_000, 4_107_542_399_999]
    rng = random.Random(20261203)
    times += [rng.randrange(10**11 + 1, 2**32 * 1000) for _ in range(300)]
    infos = []
    for n in range(len(times) * 2):
        infos.append(SDKSessionInfo(
            session_id=f"s{n}", summary=titles[n % len(titles)], last_modified=times[n % len(times)],
            custom_title=titles[(n * 7) % len(titles)] if n % 3 else None, git_branch=("HEAD", "main", None, "")[n % 4],
            cwd=("/w", "", None)[n % 3], created_at=times[(n * 5) % len(times)] if n % 2 else times[n % len(times)],
            first_prompt="p", tag=None, file_size=n))
    return infos


def test_summary_fields_are_the_references_in_c():
    for n, info in enumerate(_infos()):
        active, started_as = n % 2 == 0, "start" if n % 5 == 0 else None
        fields = c_summary(info, active, started_as)
        assert fields is not None, info
        same(fields, reference_summary_fields(info, active=active, started_as=started_as))
        assert fields["raw"] is vars(info)


@pytest.mark.parametrize("change", [
    {"session_id": 5}, {"session_id": Sub("s")}, {"summary": Sub("t")}, {"custom_title": Sub("t")},
    {"cwd": Sub("/w")}, {"cwd": 3}, {"git_branch": Sub("main")}, {"last_modified": 1.5e12},
    {"last_modified": 10**11}, {"last_modified": 2**32 * 1000}, {"last_modified": -5}, {"last_modified": True},
    {"created_at": 1772459940123.0}, {"created_at": "soon"}, {"last_modified": 10**40},
], ids=repr)
def test_summaries_outside_the_c_path_are_left_to_the_reference(change):
    info = SDKSessionInfo(session_id="s", summary="t", last_modified=1772459940123, created_at=1772459940000)
    for name, value in change.items():
        setattr(info, name, value)
    assert c_summary(info, False, None) is None
    same(summary_fields(info), reference_summary_fields(info))


def test_records_c_does_not_know_go_through_python():
    @dataclasses.dataclass
    class Other:
        type: str
        uuid: str

    @dataclasses.dataclass(slots=True)
    class Slotted:
        type: str
        uuid: str

    message = SessionMessage(type="user", uuid="u", session_id="s", message={"content": "x"})
    count = len(dataclasses.fields(SessionMessage))
    assert ROWS.record_dicts([message, Other("user", "v")], SessionMessage, count) is None
    message.extra = 1  # type: ignore[attr-defined]
    assert ROWS.record_dicts([message], SessionMessage, count) is None
    mixed = [SessionMessage(type="user", uuid="u", session_id="s", message=None), Other("user", "v"),
             Slotted("user", "w"), {"type": "user"}]
    same(message_events(mixed), reference_message_events(mixed))
    assert claude_sessions._record_size(Slotted) is None and claude_sessions._record_size(dict) is None
    assert claude_sessions._record_size(SessionMessage) == count

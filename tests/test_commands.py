"""Command values: every type, every limit at its boundary, the owner check, batches."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.commands import (
    COMMAND_SCHEMA,
    MAX_TEXT_BYTES,
    AgentSessionCommand,
    CancelPayload,
    CommandOwnerError,
    CommandValidationError,
    PromptPayload,
    RenamePayload,
    SetConfigOptionPayload,
    SetModePayload,
    StartPayload,
    identity,
    parse_command,
    parse_commands,
    utf16_length,
)
from lib.errors import CodedError, ExitCode, UsageError
from lib.types import JS_WHITESPACE

OWNER = "did:key:z6MkOwner"


def command(type_: str = "prompt", payload: object = None, **fields: object) -> dict:
    value = {
        "schema": COMMAND_SCHEMA,
        "ownerDid": OWNER,
        "id": "cmd-1",
        "createdAt": "2026-01-02T03:04:05.678Z",
        "sourceId": "codex",
        "nativeSessionId": "session-1",
        "type": type_,
        "payload": {"text": "hello"} if payload is None else payload,
    }
    value.update(fields)
    return value


def rejects(value: object, field: str, **kwargs: object) -> CommandValidationError:
    with pytest.raises(CommandValidationError) as info:
        parse_command(value, **kwargs)
    assert field in info.value.message, info.value.message
    assert info.value.exit_code == ExitCode.USAGE
    return info.value


CASES = [
    ("prompt", {"text": "hi"}, PromptPayload),
    ("start", {"text": "hi"}, StartPayload),
    ("start", {"text": "hi", "cwd": "/tmp/w", "title": "T", "mode": "plan"}, StartPayload),
    ("cancel", {}, CancelPayload),
    ("rename", {"title": "New"}, RenamePayload),
    ("set-mode", {"mode": "plan"}, SetModePayload),
    ("set-config-option", {"key": "model", "value": {"nested": [1, None]}}, SetConfigOptionPayload),
    ("set-config-option", {"key": "flag", "value": None}, SetConfigOptionPayload),
]


@pytest.mark.parametrize(("type_", "payload", "model"), CASES)
def test_every_type_parses_from_dict_and_json_string(type_, payload, model):
    value = command(type_, payload)
    from_dict = parse_command(value)
    from_text = parse_command(json.dumps(value))
    assert from_dict == from_text
    assert isinstance(from_dict.payload, model)
    assert from_dict.type == type_
    assert from_dict.to_wire() == value
    assert parse_command(from_dict.to_wire()) == from_dict


def test_commands_are_frozen():
    parsed = parse_command(command())
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        parsed.id = "other"  # type: ignore[misc]
    with pytest.raises(Exception):  # noqa: B017
        parsed.payload.text = "other"  # type: ignore[misc]


def test_optional_force_and_requested_by():
    parsed = parse_command(command(force=True, requestedBy="debug-pattern"))
    assert parsed.force is True and parsed.requested_by == "debug-pattern"
    assert parsed.to_wire()["force"] is True
    rejects(command(force="true"), "command.force")
    rejects(command(force=1), "command.force")
    rejects(command(requestedBy=5), "command.requestedBy")


def test_identities_are_normalized():
    parsed = parse_command(command(id=" cmd ", sourceId="  Codex\u00a0", nativeSessionId=" Abc/1 "))
    assert (parsed.id, parsed.source_id, parsed.native_session_id) == ("cmd", "codex", "Abc/1")


@pytest.mark.parametrize(
    ("field", "limit"), [("id", 256), ("sourceId", 256), ("nativeSessionId", 1024)]
)
def test_identity_limits(field, limit):
    assert parse_command(command(**{field: "a" * limit}))
    rejects(command(**{field: "a" * (limit + 1)}), f"command.{field}")
    # UTF-16 code units: an astral character counts 2, like JavaScript's length
    assert parse_command(command(**{field: "\U0001f600" * (limit // 2)}))
    rejects(command(**{field: "a" + "\U0001f600" * (limit // 2)}), f"command.{field}")


def test_source_id_limit_applies_after_trimming():
    assert parse_command(command(sourceId="  " + "A" * 256 + "  ")).source_id == "a" * 256


@pytest.mark.parametrize("field", ["ownerDid", "id", "createdAt", "sourceId", "nativeSessionId"])
def test_required_strings(field):
    rejects(command(**{field: ""}), f"command.{field}")
    rejects(command(**{field: 7}), f"command.{field}")
    value = command()
    del value[field]
    rejects(value, f"command.{field}")


@pytest.mark.parametrize("field", ["id", "sourceId", "nativeSessionId"])
def test_identities_reject_blank_and_control_characters(field):
    rejects(command(**{field: " \t "}), f"command.{field}")
    rejects(command(**{field: "a\x00b"}), f"command.{field}")


def test_created_at_is_not_parsed_as_a_date():
    assert parse_command(command(createdAt="yesterday")).created_at == "yesterday"


def test_text_limits_count_utf8_bytes():
    for type_ in ("prompt", "start"):
        assert parse_command(command(type_, {"text": "a" * MAX_TEXT_BYTES}))
        rejects(command(type_, {"text": "a" * (MAX_TEXT_BYTES + 1)}), "command.payload.text")
        assert parse_command(command(type_, {"text": "é" * (MAX_TEXT_BYTES // 2)}))
        rejects(command(type_, {"text": "é" * (MAX_TEXT_BYTES // 2) + "a"}), "command.payload.text")
        assert parse_command(command(type_, {"text": ""}))
        rejects(command(type_, {}), "command.payload.text")
        rejects(command(type_, {"text": None}), "command.payload.text")


@pytest.mark.parametrize(
    ("type_", "field", "limit", "extra"),
    [
        ("start", "title", 512, {"text": "x"}),
        ("start", "mode", 128, {"text": "x"}),
        ("rename", "title", 512, {}),
        ("set-mode", "mode", 128, {}),
        ("set-config-option", "key", 256, {"value": 1}),
    ],
)
def test_payload_character_limits(type_, field, limit, extra):
    assert parse_command(command(type_, {**extra, field: "m" * limit}))
    error = rejects(command(type_, {**extra, field: "m" * (limit + 1)}), f"command.payload.{field}")
    assert str(limit) in error.message
    rejects(command(type_, {**extra, field: 1}), f"command.payload.{field}")


def test_required_payload_fields():
    rejects(command("rename", {}), "command.payload.title")
    rejects(command("set-mode", {}), "command.payload.mode")
    rejects(command("set-config-option", {"value": 1}), "command.payload.key")
    rejects(command("set-config-option", {"key": "k"}), "command.payload")
    rejects(command("start", {"text": "x", "cwd": ""}), "command.payload.cwd")


def test_cancel_takes_only_an_empty_object():
    assert parse_command(command("cancel", {})).payload == CancelPayload()
    rejects(command("cancel", {"text": "x"}), "command.payload.text")


def test_payload_must_be_an_object():
    value = command()
    del value["payload"]
    rejects(value, "command.payload")
    rejects(command(payload=[1]), "command.payload")
    rejects(command(payload="text"), "command.payload")


def test_schema_and_type_are_checked():
    rejects(command(schema="commonfabric.agent-connector.command-v0"), "command.schema")
    rejects({k: v for k, v in command().items() if k != "schema"}, "command.schema")
    rejects(command("delete"), "command.type")
    rejects(command(None), "command.type")


def test_not_an_object():
    for value in (None, 1, [], "[]", "not json", "NaN", '{"a": NaN}'):
        rejects(value, "command")


def test_owner_check():
    assert parse_command(command(), owner_did=OWNER)
    with pytest.raises(CommandOwnerError) as info:
        parse_command(command(ownerDid="did:key:z6MkOther"), owner_did=OWNER)
    assert info.value.code == "command-owner-mismatch"
    assert "command.ownerDid" in info.value.message
    assert isinstance(info.value, CommandValidationError)


def test_a_batch_skips_invalid_values_and_keeps_the_rest(caplog):
    values = [
        command(id="a"),
        command(id="b", payload={"text": 1}),
        json.dumps(command(id="c")),
        command(id="d", ownerDid="did:key:z6MkOther"),
        42,
    ]
    batch = parse_commands(values, owner_did=OWNER)
    assert [c.id for c in batch.commands] == ["a", "c"]
    assert [index for index, _ in batch.rejected] == [1, 3, 4]
    assert isinstance(batch.rejected[1][1], CommandOwnerError)
    assert "skipping command 1" in caplog.text
    assert parse_commands(None).commands == ()
    assert [c.id for c in parse_commands(json.dumps(command(id="x"))).commands] == ["x"]


def test_utf16_length():
    assert utf16_length("a\U0001f600") == 3
    assert utf16_length("\ud800") == 1


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_utf16_length_counts_a_code_unit_per_character_and_two_beyond_the_bmp(text: str):
    # the definition, a character at a time (what the codec-counted length replaced)
    assert utf16_length(text) == len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


@given(st.text(alphabet=st.characters(max_codepoint=0x9F)))
def test_identity_refuses_the_first_control_character_as_a_character_loop_does(text: str):
    # the definition, a character at a time (what the regular expression replaced)
    stripped = text.strip(JS_WHITESPACE)
    first = next((ch for ch in stripped if ch < "\x20" or ch == "\x7f"), None)
    if not stripped:
        with pytest.raises(ValueError, match="empty or blank"):
            identity(text)
    elif first is not None:
        with pytest.raises(ValueError, match=f"control character U\\+{ord(first):04X}$"):
            identity(text)
    else:
        assert identity(text) == stripped


def test_model_constructed_directly_checks_payload_type():
    with pytest.raises(ValueError):
        AgentSessionCommand(
            owner_did=OWNER, id="x", created_at="t", source_id="codex",
            native_session_id="s", type="rename", payload=PromptPayload(text="hi"),
        )


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)
KEYS = st.sampled_from(
    ["schema", "ownerDid", "id", "createdAt", "sourceId", "nativeSessionId", "type", "payload",
     "force", "requestedBy"]
)
PAYLOADS = st.dictionaries(st.sampled_from(["text", "cwd", "title", "mode", "key", "value"]), JSON)
VALID = st.sampled_from(CASES).map(lambda case: command(case[0], case[1]))
NEAR = st.builds(
    lambda base, changes: {**base, **changes},
    VALID | st.builds(command, st.sampled_from([c[0] for c in CASES]), PAYLOADS),
    st.dictionaries(KEYS, JSON | st.sampled_from([COMMAND_SCHEMA, "prompt", "cancel", ""]), max_size=3),
)


@settings(derandomize=True, max_examples=300)
@given(st.one_of(JSON, NEAR, NEAR.map(json.dumps), st.text(max_size=30)))
def test_parse_raises_only_coded_errors(value):
    try:
        parsed = parse_command(value, owner_did=OWNER)
    except CodedError as exc:
        assert isinstance(exc, UsageError) and exc.code in {"invalid-command", "command-owner-mismatch"}
        assert exc.message.startswith("command")
    else:
        assert parse_command(parsed.to_wire()) == parsed


def test_config_value_is_detached_and_deep_values_are_coded_errors():
    value = {"list": [1]}
    parsed = parse_command(command("set-config-option", {"key": "k", "value": value}))
    value["list"].append(2)
    assert parsed.payload.value == {"list": [1]}
    parsed.to_wire()["payload"]["value"]["list"].append(3)
    assert parsed.payload.value == {"list": [1]}
    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    rejects(command("set-config-option", {"key": "k", "value": deep}), "command.payload")
    rejects("[" * 100000 + "]" * 100000, "command")

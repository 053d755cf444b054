"""Receipts: every status round-trips; exact UTC ISO times; the one parse boundary."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.commands import COMMAND_SCHEMA, parse_command
from lib.errors import CodedError
from lib.fabric.value_decoding import from_fvj1_string
from lib.fabric.values import to_fvj1_string
from lib.hashing import UNDEFINED
from lib.receipts import (
    RECEIPT_SCHEMA,
    RECEIPT_STATUSES,
    CommandReceipt,
    ReceiptValidationError,
    claim_publish_failed,
    format_utc_iso,
    in_flight_receipt,
    parse_command_receipt,
    terminal_receipt,
)
from lib.types import CommandExecutionResult


def receipt(**fields: object) -> dict:
    value = {
        "schema": RECEIPT_SCHEMA,
        "commandId": "cmd-1",
        "sourceId": "codex",
        "nativeSessionId": "Session-1",
        "status": "succeeded",
    }
    value.update(fields)
    return value


def rejects(value: object, field: str, **kwargs: object) -> ReceiptValidationError:
    with pytest.raises(ReceiptValidationError) as info:
        parse_command_receipt(value, **kwargs)
    assert field in info.value.message, info.value.message
    assert info.value.code == "invalid-receipt"
    return info.value


@pytest.mark.parametrize("status", RECEIPT_STATUSES)
def test_every_status_round_trips(status):
    value = receipt(
        status=status,
        producer="did:key:z6MkProducer",
        claimedAt="2026-01-02T03:04:05.678Z",
        completedAt="2026-01-02T03:04:06.000Z",
        providerOperationId="turn-7",
        error={"code": "provider-failed", "message": "it broke", "retryable": True},
        result={"nativeSessionId": "s", "cwd": "/w", "n": [1, 2.5, None]},
    )
    parsed = parse_command_receipt(value)
    assert parsed.status == status
    assert parsed.to_wire() == value
    assert parse_command_receipt(parsed.to_wire()) == parsed
    assert parse_command_receipt(json.loads(json.dumps(parsed.to_wire()))) == parsed


def test_minimal_receipt_leaves_optional_fields_out():
    parsed = parse_command_receipt(receipt())
    assert parsed.to_wire() == receipt()
    assert parsed.producer is None and parsed.result is None


def test_receipts_are_frozen_and_detached():
    source = receipt(result={"list": [1]})
    parsed = parse_command_receipt(source)
    source["result"]["list"].append(2)
    assert parsed.result == {"list": [1]}
    parsed.to_wire()["result"]["list"].append(3)
    assert parsed.result == {"list": [1]}
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        parsed.status = "failed"  # type: ignore[misc]


def test_result_keeps_fabric_values_from_the_ledger():
    decoded = from_fvj1_string(to_fvj1_string({"big": 2**70, "gone": UNDEFINED}))
    parsed = parse_command_receipt(receipt(result=decoded))
    assert parsed.result["big"] == 2**70 and parsed.result["gone"] is UNDEFINED


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-02T03:04:05.678Z",
        "1970-01-01T00:00:00.000Z",
        "2024-02-29T23:59:59.999Z",
    ],
)
def test_exact_iso_times_pass(text):
    assert parse_command_receipt(receipt(claimedAt=text, completedAt=text)).claimed_at == text


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-02T03:04:05Z",  # no milliseconds
        "2026-01-02T03:04:05.6789Z",  # microseconds
        "2026-01-02T03:04:05.67Z",
        "2026-01-02T03:04:05.678+00:00",  # an offset, even a zero one
        "2026-01-02T03:04:05.678",  # no zone
        "2026-01-02 03:04:05.678Z",
        "2026-01-02T03:04:05.678z",
        "2026-02-30T03:04:05.678Z",  # not a date
        "2026-01-02T24:00:00.000Z",
        "2026-01-02T03:04:05.678Z\n",
        "",
    ],
)
def test_inexact_iso_times_fail(text):
    rejects(receipt(claimedAt=text), "receipt.claimedAt")
    rejects(receipt(completedAt=text), "receipt.completedAt")


def test_format_utc_iso_is_to_iso_string():
    moment = datetime(2026, 1, 2, 3, 4, 5, 678999, tzinfo=timezone(timedelta(hours=2)))
    assert format_utc_iso(moment) == "2026-01-02T01:04:05.678Z"
    assert format_utc_iso(datetime(2026, 1, 2, tzinfo=UTC)) == "2026-01-02T00:00:00.000Z"


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("commandId", " cmd"),
        ("commandId", ""),
        ("commandId", "c" * 257),
        ("sourceId", "Codex"),
        ("sourceId", " codex"),
        ("sourceId", "s" * 257),
        ("nativeSessionId", "s "),
        ("nativeSessionId", "s" * 1025),
        ("nativeSessionId", 5),
        ("producer", ""),
        ("producer", 1),
        ("providerOperationId", ""),
        ("status", "done"),
        ("status", None),
        ("result", [1]),
        ("result", "fvj1:{}"),
        ("error", {"code": "", "message": "m", "retryable": False}),
        ("error", {"code": "c", "message": "", "retryable": False}),
        ("error", {"code": "c", "message": "m", "retryable": "no"}),
        ("error", {"code": "c", "message": "m"}),
        ("error", "boom"),
    ],
)
def test_invalid_fields_are_named(field, bad):
    rejects(receipt(**{field: bad}), f"receipt.{field}")


def test_limits_at_the_boundary_pass():
    assert parse_command_receipt(receipt(commandId="c" * 256, sourceId="s" * 256, nativeSessionId="n" * 1024))


def test_schema_command_id_and_context():
    rejects(receipt(schema="commonfabric.agent-connector.command"), "receipt.schema")
    rejects(None, "receipt")
    rejects([receipt()], "receipt")
    rejects(receipt(), "receipt.commandId", command_id="other")
    assert parse_command_receipt(receipt(), command_id="cmd-1").command_id == "cmd-1"
    rejects(receipt(status="x"), "ledger receipt cmd-1.status", context="ledger receipt cmd-1")


def test_worker_receipts_from_a_command():
    cmd = parse_command(
        {
            "schema": COMMAND_SCHEMA, "ownerDid": "did:key:z", "id": "c1", "createdAt": "t",
            "sourceId": "Codex", "nativeSessionId": "s1", "type": "start",
            "payload": {"text": "go"}, "requestedBy": "someone",
        }
    )
    claim = in_flight_receipt(cmd, producer="did:key:zP", claimed_at="2026-01-02T03:04:05.678Z")
    assert claim.status == "in-flight" and claim.source_id == "codex"
    assert "requestedBy" not in claim.to_wire() and "someone" not in json.dumps(claim.to_wire())
    outcome = CommandExecutionResult(
        status="succeeded", provider_operation_id="op", result={"nativeSessionId": "s1", "cwd": "/w"}
    )
    done = terminal_receipt(claim, outcome, completed_at="2026-01-02T03:04:06.000Z")
    assert done.terminal and not claim.terminal
    assert done.to_wire() == {
        "schema": RECEIPT_SCHEMA, "commandId": "c1", "producer": "did:key:zP", "sourceId": "codex",
        "nativeSessionId": "s1", "status": "succeeded", "claimedAt": "2026-01-02T03:04:05.678Z",
        "completedAt": "2026-01-02T03:04:06.000Z", "providerOperationId": "op",
        "result": {"nativeSessionId": "s1", "cwd": "/w"},
    }
    failed = claim_publish_failed(claim, "store unavailable")
    assert failed.status == "failed" and failed.error.code == "claim-publish-failed"
    assert parse_command_receipt(failed.to_wire()) == failed
    unsupported = terminal_receipt(claim, CommandExecutionResult.unsupported("rename", "codex"))
    assert unsupported.error.code == "unsupported" and unsupported.error.retryable is False


def test_a_parsed_receipt_passes_through():
    parsed = parse_command_receipt(receipt())
    assert parse_command_receipt(parsed) is parsed
    assert isinstance(parsed, CommandReceipt)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)
FIELDS = st.sampled_from(
    ["schema", "commandId", "producer", "sourceId", "nativeSessionId", "status", "claimedAt",
     "completedAt", "providerOperationId", "error", "result"]
)
NEAR = st.builds(
    lambda changes: {**receipt(), **changes},
    st.dictionaries(FIELDS, JSON | st.sampled_from([*RECEIPT_STATUSES, "2026-01-02T03:04:05.678Z"]), max_size=3),
)


@settings(derandomize=True, max_examples=300)
@given(st.one_of(JSON, NEAR))
def test_parse_raises_only_coded_errors(value):
    try:
        parsed = parse_command_receipt(value)
    except CodedError as exc:
        assert isinstance(exc, ReceiptValidationError) and exc.message.startswith("receipt")
    else:
        assert parse_command_receipt(parsed.to_wire()) == parsed


def test_deep_results_are_coded_errors():
    deep: object = 1
    for _ in range(5000):
        deep = {"a": deep}
    rejects(receipt(result={"deep": deep}), "receipt.result")

"""Command receipts as the ledger stores them (interfaces §Receipt).

`validate_receipt` is the minimal receipt check the ledger needs until
`lib/commands.py` provides the shared `parse_command_receipt`; it then moves there.
In the ledger file a receipt's `result` is an `fvj1:` string (`to_stored`), decoded
again on read (`from_stored`), so undefined, big integers and special numbers survive.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from lib.errors import CodedError
from lib.fabric import values

RECEIPT_SCHEMA = "commonfabric.agent-connector.command-receipt"
STATUSES = frozenset(
    {"pending", "in-flight", "succeeded", "failed", "unsupported", "needs-confirmation", "unknown"}
)
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\Z")  # Date.toISOString()
_LIMITS = {"commandId": 256, "sourceId": 256, "nativeSessionId": 1024}
_OPTIONAL_STRINGS = ("producer", "providerOperationId")
_KNOWN = {"schema", "status", "claimedAt", "completedAt", "error", "result", *_LIMITS, *_OPTIONAL_STRINGS}


class InvalidReceipt(CodedError):
    """A receipt the ledger will not store or read back; `code` is `invalid-receipt`."""


def _bad(where: str, why: str) -> InvalidReceipt:
    return InvalidReceipt("invalid-receipt", f"{where}: {why}")


def validate_receipt(value: Any, where: str = "receipt") -> None:
    """Raise InvalidReceipt unless `value` is a receipt (its `result`, if any, a dict)."""
    if not isinstance(value, dict):
        raise _bad(where, "is not an object")
    unknown = sorted(set(value) - _KNOWN, key=str)
    if unknown:
        raise _bad(where, f"has unknown field {unknown[0]!r}")
    if value.get("schema") != RECEIPT_SCHEMA:
        raise _bad(where, f"schema is not {RECEIPT_SCHEMA!r}")
    for field, limit in _LIMITS.items():
        text = value.get(field)
        if not isinstance(text, str) or not text or text != text.strip():
            raise _bad(where, f"{field} is not a non-empty trimmed string")
        if len(text) > limit:
            raise _bad(where, f"{field} is longer than {limit} characters")
    for field in _OPTIONAL_STRINGS:
        if field in value and (not isinstance(value[field], str) or not value[field]):
            raise _bad(where, f"{field} is not a non-empty string")
    if value.get("status") not in STATUSES:
        raise _bad(where, f"status {value.get('status')!r} is not one of {', '.join(sorted(STATUSES))}")
    for field in ("claimedAt", "completedAt"):
        if field in value and not (isinstance(value[field], str) and _ISO.match(value[field])):
            raise _bad(where, f"{field} is not a UTC time like 2026-01-02T03:04:05.678Z")
    if "error" in value:
        error = value["error"]
        if not isinstance(error, dict) or set(error) != {"code", "message", "retryable"}:
            raise _bad(where, "error is not an object with code, message and retryable")
        if not all(isinstance(error[k], str) and error[k] for k in ("code", "message")):
            raise _bad(where, "error code and message are not non-empty strings")
        if not isinstance(error["retryable"], bool):
            raise _bad(where, "error retryable is not a boolean")
    if "result" in value and not isinstance(value["result"], dict):
        raise _bad(where, "result is not an object")


def to_stored(receipt: Any) -> dict[str, Any]:
    """A validated, detached copy of `receipt` with its result as an `fvj1:` string."""
    validate_receipt(receipt)
    stored = {k: v for k, v in receipt.items() if k != "result"}
    stored = copy.deepcopy(stored)  # plain JSON only: result is encoded apart
    if "result" in receipt:
        try:
            stored["result"] = values.to_fvj1_string(receipt["result"])
        except values.ValueEncodingError as exc:
            raise _bad("receipt", f"result is not a Fabric value ({exc.message})") from None
    return stored


def from_stored(stored: dict[str, Any], where: str) -> dict[str, Any]:
    """The receipt a stored entry holds (a fresh copy, result decoded); InvalidReceipt when invalid."""
    receipt = copy.deepcopy(stored)
    if "result" in receipt:
        text = receipt["result"]
        if not isinstance(text, str):
            raise _bad(where, "result is not an fvj1 string")
        try:
            receipt["result"] = values.from_fvj1_string(text)
        except values.ValueEncodingError as exc:
            raise _bad(where, f"result is not fvj1 ({exc.message})") from None
    validate_receipt(receipt, where)
    return receipt

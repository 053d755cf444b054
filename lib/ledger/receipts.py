"""Command receipts as the ledger stores them (interfaces §Receipt).

`validate_receipt` is `lib.receipts.parse_command_receipt`, the one receipt check,
with the ledger's refusal of unknown fields.
In the ledger file a receipt's `result` is an `fvj1:` string (`to_stored`), decoded
again on read (`from_stored`), so undefined, big integers and special numbers survive.
"""

from __future__ import annotations

import copy
from typing import Any

from lib.errors import CodedError
from lib.fabric import value_decoding, values
from lib.receipts import CommandReceipt, ReceiptValidationError, parse_command_receipt

_KNOWN = {"schema", "status", "claimedAt", "completedAt", "error", "result", "commandId", "sourceId",
          "nativeSessionId", "producer", "providerOperationId"}


class InvalidReceipt(CodedError):
    """A receipt the ledger will not store or read back; `code` is `invalid-receipt`."""


def _bad(where: str, why: str) -> InvalidReceipt:
    return InvalidReceipt("invalid-receipt", f"{where}: {why}")


def validate_receipt(value: Any, where: str = "receipt") -> None:
    """Raise InvalidReceipt unless `value` is a receipt: the one receipt check
    (`lib.receipts.parse_command_receipt`), plus the ledger's own strictness: no field
    the format does not have."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - _KNOWN, key=str)
        if unknown:
            raise _bad(where, f"has unknown field {unknown[0]!r}")
    try:
        parse_command_receipt(value, context=where)
    except ReceiptValidationError as exc:
        raise InvalidReceipt("invalid-receipt", exc.message) from None


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


def stored_receipt(receipt: CommandReceipt) -> dict[str, Any]:
    """`to_stored` for a receipt already validated (a `CommandReceipt` is checked when it
    is made and frozen): its wire form, result as an `fvj1:` string, without a second
    validation and copy."""
    stored = receipt.to_wire()  # a detached copy
    if "result" in stored:
        try:
            stored["result"] = values.to_fvj1_string(stored["result"])
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
            receipt["result"] = value_decoding.from_fvj1_string(text)
        except values.ValueEncodingError as exc:
            raise _bad(where, f"result is not fvj1 ({exc.message})") from None
    validate_receipt(receipt, where)
    return receipt

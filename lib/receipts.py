"""Command receipts (spec "Command and receipt formats" / "Receipt"; "Command result").

`parse_command_receipt(value, command_id=..., context=...)` is the one validation
boundary for receipts read from Fabric or the ledger: it returns a frozen, detached
`CommandReceipt` or raises `ReceiptValidationError` naming the field. Identities must
already be canonical (trimmed; the source id lowercased); times must be the exact UTC
form JavaScript's `Date.toISOString()` writes, `YYYY-MM-DDTHH:MM:SS.sssZ`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ValidationError, field_validator, model_validator

from lib.commands import (
    MAX_COMMAND_ID,
    MAX_NATIVE_SESSION_ID,
    MAX_SOURCE_ID,
    STRICT_WIRE,
    AgentSessionCommand,
    NonEmpty,
    at_most,
    describe,
    identity,
)
from lib.errors import CodedError, ExitCode
from lib.types import CommandExecutionResult, WireModel, normalize_source_id

RECEIPT_SCHEMA = "commonfabric.agent-connector.command-receipt"
ReceiptStatus = Literal[
    "pending", "in-flight", "succeeded", "failed", "unsupported", "needs-confirmation", "unknown"
]
RECEIPT_STATUSES: tuple[str, ...] = (
    "pending", "in-flight", "succeeded", "failed", "unsupported", "needs-confirmation", "unknown",
)
TERMINAL_STATUSES: frozenset[str] = frozenset(RECEIPT_STATUSES) - {"pending", "in-flight"}

# What a command that waited for its receipt exits with (README "Exit codes").
STATUS_EXIT_CODES: dict[str, ExitCode] = {
    "succeeded": ExitCode.OK,
    "failed": ExitCode.FAILURE,
    "unsupported": ExitCode.USAGE,
    "needs-confirmation": ExitCode.NEEDS_CONFIRMATION,
    "unknown": ExitCode.UNKNOWN_OUTCOME,
}

_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", re.ASCII)


class ReceiptValidationError(CodedError, ValueError):
    """A receipt value that cannot be trusted; `message` names the field."""

    def __init__(self, message: str, code: str = "invalid-receipt") -> None:
        super().__init__(code, message)


def format_utc_iso(moment: datetime) -> str:
    """`Date.toISOString()`: UTC, milliseconds (truncated), `Z`. A naive time is UTC."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def utc_now_iso() -> str:
    return format_utc_iso(datetime.now(UTC))


def check_utc_iso(value: str) -> str:
    if not _ISO.fullmatch(value):
        raise ValueError(f"must be an exact UTC ISO time like 2026-01-02T03:04:05.678Z, got {value!r}")
    try:
        datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        raise ValueError(f"is not a real date and time: {value!r}") from None
    return value


def _canonical(normalize: Any) -> AfterValidator:
    def check(value: str) -> str:
        try:
            canonical = normalize(identity(value))
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        if canonical != value:
            raise ValueError(f"must be canonical ({canonical!r}), got {value!r}")
        return value

    return AfterValidator(check)


def _same(value: str) -> str:
    return value


UtcIso = Annotated[str, AfterValidator(check_utc_iso)]
CanonicalCommandId = Annotated[str, _canonical(_same), at_most(MAX_COMMAND_ID)]
CanonicalSourceId = Annotated[str, _canonical(normalize_source_id), at_most(MAX_SOURCE_ID)]
CanonicalSessionId = Annotated[str, _canonical(_same), at_most(MAX_NATIVE_SESSION_ID)]

class ReceiptError(WireModel):
    """A structured error: non-empty `code` and `message`, Boolean `retryable`."""

    model_config = STRICT_WIRE

    code: NonEmpty
    message: NonEmpty
    retryable: bool


class CommandReceipt(WireModel):
    """One command's receipt. Frozen; `result` is a detached copy (any Fabric value
    inside an object, so a ledger's decoded `fvj1` result is kept as it is)."""

    model_config = STRICT_WIRE

    schema_: Literal["commonfabric.agent-connector.command-receipt"] = RECEIPT_SCHEMA
    command_id: CanonicalCommandId
    producer: NonEmpty | None = None
    source_id: CanonicalSourceId
    native_session_id: CanonicalSessionId
    status: ReceiptStatus
    claimed_at: UtcIso | None = None
    completed_at: UtcIso | None = None
    provider_operation_id: NonEmpty | None = None
    error: ReceiptError | None = None
    result: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _schema_alias(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "schema" in data:
            data = {key: item for key, item in data.items() if key != "schema"}
            data["schema_"] = RECEIPT_SCHEMA
        return data

    @field_validator("result", mode="before")
    @classmethod
    def _detached_object(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
            raise ValueError("must be an object with string keys")
        return copy.deepcopy(dict(value))

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def to_wire(self, **kwargs: Any) -> dict[str, Any]:
        """The camelCase receipt; absent optional fields are left out. `result` is a
        copy of the value as it is (the ledger writes it as `fvj1`)."""
        data: dict[str, Any] = {"schema": RECEIPT_SCHEMA}
        dumped = self.model_dump(by_alias=True, exclude={"schema_", "result"}, exclude_none=True)
        data.update(dumped)
        if self.result is not None:
            data["result"] = copy.deepcopy(self.result)
        return data


def parse_command_receipt(
    value: Any, *, command_id: str | None = None, context: str | None = None
) -> CommandReceipt:
    """A trusted receipt or `ReceiptValidationError`. With `command_id`, the receipt must
    be that command's. `context` only changes the error prefix (default `receipt`)."""
    prefix = context or "receipt"
    if isinstance(value, CommandReceipt):
        receipt = value
    else:
        if not isinstance(value, Mapping):
            kind = "null" if value is None else type(value).__name__
            raise ReceiptValidationError(f"{prefix}: must be an object, not {kind}")
        if value.get("schema") != RECEIPT_SCHEMA:
            raise ReceiptValidationError(f"{prefix}.schema: must be {RECEIPT_SCHEMA!r}")
        if "status" in value and not (isinstance(value["status"], str) and value["status"] in RECEIPT_STATUSES):
            raise ReceiptValidationError(f"{prefix}.status: must be one of {', '.join(RECEIPT_STATUSES)}")
        try:
            receipt = CommandReceipt.model_validate(dict(value))
        except ValidationError as exc:
            raise ReceiptValidationError(describe(exc, prefix)) from None
        except RecursionError:
            raise ReceiptValidationError(f"{prefix}.result: nested too deeply") from None
    if command_id is not None and receipt.command_id != command_id:
        raise ReceiptValidationError(f"{prefix}.commandId: expected {command_id!r}, got {receipt.command_id!r}")
    return receipt


# ---- building receipts (the worker's steps) ------------------------------------------


def in_flight_receipt(
    command: AgentSessionCommand, *, producer: str | None = None, claimed_at: str | None = None
) -> CommandReceipt:
    """The claim written before the provider call. `requestedBy` is never copied."""
    return CommandReceipt(
        command_id=command.id,
        producer=producer,
        source_id=command.source_id,
        native_session_id=command.native_session_id,
        status="in-flight",
        claimed_at=claimed_at or utc_now_iso(),
    )


def terminal_receipt(
    claim: CommandReceipt, outcome: CommandExecutionResult, *, completed_at: str | None = None
) -> CommandReceipt:
    """The one terminal receipt: status, providerOperationId, error and result copied
    from the provider's `CommandExecutionResult`."""
    error = None
    if outcome.error is not None:
        error = ReceiptError(
            code=outcome.error.code, message=outcome.error.message, retryable=outcome.error.retryable
        )
    return CommandReceipt(
        command_id=claim.command_id,
        producer=claim.producer,
        source_id=claim.source_id,
        native_session_id=claim.native_session_id,
        status=outcome.status,
        claimed_at=claim.claimed_at,
        completed_at=completed_at or utc_now_iso(),
        provider_operation_id=outcome.provider_operation_id,
        error=error,
        result=copy.deepcopy(outcome.result) if outcome.result is not None else None,
    )


def claim_publish_failed(claim: CommandReceipt, message: str, *, completed_at: str | None = None) -> CommandReceipt:
    """The failed receipt for a claim whose publication failed: no provider call ran."""
    outcome = CommandExecutionResult.failure("failed", "claim-publish-failed", message, retryable=False)
    return terminal_receipt(claim, outcome, completed_at=completed_at)

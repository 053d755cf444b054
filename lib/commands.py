"""Command values (spec "Command and receipt formats" / "Command"): parsing and validation.

A command cell holds an array of command objects; one command may also arrive as a JSON
string. `parse_command(value, owner_did=...)` is the one way in: it returns a frozen,
trusted `AgentSessionCommand` or raises `CommandValidationError` (a `UsageError`) whose
message names the offending field, e.g. `command.payload.text: ...`.

Limits are the spec's. Lengths "in characters" count UTF-16 code units, as JavaScript's
`String.length` does, so a limit agrees with the TypeScript connector (an emoji counts
2). The 128 KiB text limits count UTF-8 bytes (131,072). Identities are normalized
before their limits apply: the source id trimmed (JavaScript `trim()`) and lowercased,
the command id and native session id trimmed; none may be empty or hold a control
character. `createdAt` must be a non-empty string and is not parsed as a date.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    ValidationError,
    field_validator,
    model_validator,
)

from lib.errors import CodedError, UsageError
from lib.types import JS_WHITESPACE, WireModel, normalize_source_id

log = logging.getLogger(__name__)

COMMAND_SCHEMA = "commonfabric.agent-connector.command"
COMMAND_TYPES: tuple[str, ...] = ("prompt", "start", "cancel", "rename", "set-mode", "set-config-option")
CommandType = Literal["prompt", "start", "cancel", "rename", "set-mode", "set-config-option"]

MAX_COMMAND_ID = 256
MAX_SOURCE_ID = 256
MAX_NATIVE_SESSION_ID = 1024
MAX_TEXT_BYTES = 128 * 1024
MAX_TITLE = 512
MAX_MODE = 128
MAX_CONFIG_KEY = 256


class CommandValidationError(UsageError, ValueError):
    """A command value that is not a valid command; `message` names the field."""

    def __init__(self, message: str, code: str = "invalid-command") -> None:
        super().__init__(code, message)


class CommandOwnerError(CommandValidationError):
    """A valid command whose `ownerDid` is not the configured owner."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "command-owner-mismatch")


# ---- shared string rules (receipts use them too) -------------------------------------


def utf16_length(text: str) -> int:
    """JavaScript's `String.length`: UTF-16 code units (a lone surrogate counts 1).
    Counted by the codec, not a character loop (every command's texts pass here)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def non_empty(value: str) -> str:
    if not value:
        raise ValueError("must be a non-empty string")
    return value


def at_most(limit: int) -> AfterValidator:
    def check(value: str) -> str:
        if utf16_length(value) > limit:
            raise ValueError(f"must be at most {limit} characters (UTF-16 code units), got {utf16_length(value)}")
        return value

    return AfterValidator(check)


def _text_limit(value: str) -> str:
    if utf8_length(value) > MAX_TEXT_BYTES:
        raise ValueError(f"must be at most {MAX_TEXT_BYTES} bytes (128 KiB) of UTF-8, got {utf8_length(value)}")
    return value


def identity(value: str) -> str:
    """A trimmed, non-empty identity without control characters."""
    value = value.strip(JS_WHITESPACE)
    if not value:
        raise ValueError("must not be empty or blank")
    control = _CONTROL.search(value)  # the first one, as a character loop finds it
    if control is not None:
        raise ValueError(f"must not contain control character U+{ord(control.group()):04X}")
    return value


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def error_location(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc if not (isinstance(part, str) and part.startswith("function-")))


def describe(exc: ValidationError, prefix: str) -> str:
    """One line naming each failing field: `prefix.field: reason`."""
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        where = error_location(err["loc"])
        reason = err["msg"].removeprefix("Value error, ")
        parts.append(f"{prefix}.{where}: {reason}" if where else f"{prefix}: {reason}")
    return "; ".join(parts)


NonEmpty = Annotated[str, AfterValidator(non_empty)]
Text = Annotated[str, AfterValidator(_text_limit)]
Title = Annotated[str, at_most(MAX_TITLE)]
Mode = Annotated[str, at_most(MAX_MODE)]
CommandId = Annotated[str, AfterValidator(identity), at_most(MAX_COMMAND_ID)]
NativeSessionId = Annotated[str, AfterValidator(identity), at_most(MAX_NATIVE_SESSION_ID)]
SourceId = Annotated[
    str, AfterValidator(identity), AfterValidator(normalize_source_id), at_most(MAX_SOURCE_ID)
]

# The model config of every command and receipt value: strict types, camelCase, frozen.
STRICT_WIRE = ConfigDict(
    alias_generator=WireModel.model_config["alias_generator"],
    populate_by_name=True,
    strict=True,
    frozen=True,
    extra="ignore",
)


# ---- payloads ------------------------------------------------------------------------


class _Payload(WireModel):
    model_config = STRICT_WIRE

    def to_wire(self, **kwargs: Any) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json", exclude_none=True, **kwargs)


class PromptPayload(_Payload):
    text: Text


class StartPayload(_Payload):
    text: Text
    cwd: NonEmpty | None = None
    title: Title | None = None
    mode: Mode | None = None


class CancelPayload(_Payload):
    """An empty object: any key is an error."""

    model_config = ConfigDict(**{**STRICT_WIRE, "extra": "forbid"})


class RenamePayload(_Payload):
    title: Title


class SetModePayload(_Payload):
    mode: Mode


class SetConfigOptionPayload(_Payload):
    """`value` is required (null is a value) and is any JSON value."""

    key: Annotated[str, at_most(MAX_CONFIG_KEY)]
    value: Any

    @model_validator(mode="before")
    @classmethod
    def _value_present(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "value" not in data:
            raise ValueError("value is required (any JSON value, null included)")
        return data

    @field_validator("value", mode="before")
    @classmethod
    def _detached(cls, value: Any) -> Any:
        return copy.deepcopy(value)

    def to_wire(self, **kwargs: Any) -> dict[str, Any]:
        return {"key": self.key, "value": copy.deepcopy(self.value)}


Payload = PromptPayload | StartPayload | CancelPayload | RenamePayload | SetModePayload | SetConfigOptionPayload
PAYLOAD_TYPES: dict[str, type[_Payload]] = {
    "prompt": PromptPayload,
    "start": StartPayload,
    "cancel": CancelPayload,
    "rename": RenamePayload,
    "set-mode": SetModePayload,
    "set-config-option": SetConfigOptionPayload,
}


# ---- the command ---------------------------------------------------------------------


class AgentSessionCommand(WireModel):
    """One parsed command. Frozen; identities normalized; payload typed by `type`."""

    model_config = STRICT_WIRE

    schema_: Literal["commonfabric.agent-connector.command"] = COMMAND_SCHEMA
    owner_did: NonEmpty
    id: CommandId
    created_at: NonEmpty
    source_id: SourceId
    native_session_id: NativeSessionId
    type: CommandType
    payload: Payload
    force: bool | None = None
    requested_by: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _schema_alias(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "schema" in data:
            data = {**data, "schema_": data["schema"]}
            del data["schema"]
        return data

    @model_validator(mode="before")
    @classmethod
    def _typed_payload(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        kind, payload = data.get("type"), data.get("payload")
        if isinstance(kind, str) and kind in PAYLOAD_TYPES and not isinstance(payload, BaseModel):
            if "payload" not in data:
                raise ValueError("payload is required")
            if not isinstance(payload, Mapping):
                raise ValueError(f"payload must be an object for type {kind!r}")
            try:
                typed = PAYLOAD_TYPES[kind].model_validate(payload)
            except ValidationError as exc:
                raise ValueError(describe(exc, "payload")) from None
            data = {**data, "payload": typed}
        return data

    @model_validator(mode="after")
    def _payload_matches_type(self) -> AgentSessionCommand:
        if not isinstance(self.payload, PAYLOAD_TYPES[self.type]):
            raise ValueError(f"payload is not a {self.type} payload")
        return self

    def to_wire(self, **kwargs: Any) -> dict[str, Any]:
        data: dict[str, Any] = {"schema": COMMAND_SCHEMA}
        data.update(self.model_dump(by_alias=True, exclude={"schema_", "payload", "force", "requested_by"}))
        data["payload"] = self.payload.to_wire()
        if self.force is not None:
            data["force"] = self.force
        if self.requested_by is not None:
            data["requestedBy"] = self.requested_by
        return data


def _decode_json(text: str) -> Any:
    def no_constant(name: str) -> Any:
        raise CommandValidationError(f"command: {name} is not JSON")

    try:
        return json.loads(text, parse_constant=no_constant)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise CommandValidationError(f"command: not a JSON object: {exc}") from None


def _typed_payload(kind: str, data: dict[str, Any]) -> _Payload:
    if "payload" not in data:
        raise CommandValidationError("command.payload: is required")
    payload = data["payload"]
    if not isinstance(payload, Mapping):
        raise CommandValidationError(f"command.payload: must be an object, not {_kind(payload)}")
    try:
        return PAYLOAD_TYPES[kind].model_validate(dict(payload))
    except ValidationError as exc:
        raise CommandValidationError(describe(exc, "command.payload")) from None
    except RecursionError:
        raise CommandValidationError("command.payload: nested too deeply") from None


def parse_command(value: Any, *, owner_did: str | None = None) -> AgentSessionCommand:
    """A trusted command from a command object or its JSON string.

    With `owner_did`, a command owned by anyone else raises `CommandOwnerError`.
    """
    if isinstance(value, AgentSessionCommand):
        command = value
    else:
        if isinstance(value, str):
            value = _decode_json(value)
        if not isinstance(value, Mapping):
            raise CommandValidationError(f"command: must be an object, not {_kind(value)}")
        if not all(isinstance(key, str) for key in value):
            raise CommandValidationError("command: object keys must be strings")
        if value.get("schema") != COMMAND_SCHEMA:
            raise CommandValidationError(f"command.schema: must be {COMMAND_SCHEMA!r}")
        if "type" in value and not (isinstance(value["type"], str) and value["type"] in PAYLOAD_TYPES):
            raise CommandValidationError(f"command.type: must be one of {', '.join(COMMAND_TYPES)}")
        data = dict(value)
        kind = data.get("type")
        if isinstance(kind, str):
            data["payload"] = _typed_payload(kind, data)
        try:
            command = AgentSessionCommand.model_validate(data)
        except ValidationError as exc:
            raise CommandValidationError(describe(exc, "command")) from None
    if owner_did is not None and command.owner_did != owner_did:
        raise CommandOwnerError(
            f"command.ownerDid: {command.owner_did!r} is not the configured owner {owner_did!r}"
        )
    return command


@dataclass(frozen=True)
class CommandBatch:
    """The valid commands of a cell value, in order, and what was skipped and why."""

    commands: tuple[AgentSessionCommand, ...] = ()
    rejected: tuple[tuple[int, CodedError], ...] = field(default=())


def parse_commands(value: Any, *, owner_did: str | None = None) -> CommandBatch:
    """Every command of a command-cell value (an array), or one command (object or JSON
    string). An invalid element is logged and skipped; the rest are still returned. A
    value that is neither (null, a number) is an empty queue."""
    if isinstance(value, list | tuple):
        items = list(value)
    elif isinstance(value, str | Mapping):
        items = [value]
    else:
        items = []
    commands: list[AgentSessionCommand] = []
    rejected: list[tuple[int, CodedError]] = []
    for index, item in enumerate(items):
        try:
            commands.append(parse_command(item, owner_did=owner_did))
        except CommandValidationError as exc:
            log.warning("skipping command %d: %s", index, exc.message)
            rejected.append((index, exc))
    return CommandBatch(tuple(commands), tuple(rejected))


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__

"""Provider-neutral models: sources, sessions, snapshots, commands and their results.

Stored and streamed JSON uses the spec's camelCase names (they are wire formats other
programs read); Python attributes are snake_case and pydantic aliases bridge the two.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

DriverKind = Literal["claude-agent-sdk", "codex-app-server", "acp"]
DRIVER_KINDS: tuple[str, ...] = ("claude-agent-sdk", "codex-app-server", "acp")
CodexTransport = Literal["stdio", "managed", "proxy"]
CommandStatus = Literal["succeeded", "failed", "unsupported", "needs-confirmation", "unknown"]
MessageRole = Literal["user", "assistant", "system", "tool", "other"]

PREVIEW_LIMIT = 500
# A provider's line (one JSON-RPC message) longer than this fails the run: five times the
# largest real Codex message seen (a whole ~50 MB session in one `thread/read` answer),
# and a bound on what a provider that never ends a line can make us hold.
DEFAULT_MAX_LINE_BYTES = 256 * 1024 * 1024
# A collection call (start-up, an inventory page, a read) during which the provider sends
# nothing at all for this long fails with `provider-stalled`. Prompts have no such limit.
DEFAULT_STALL_TIMEOUT_SECONDS = 300.0
MIN_MAX_LINE_BYTES = 1024


class WireModel(BaseModel):
    """Base for every model that crosses a process or storage boundary."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=False,
    )

    def to_wire(self, **kwargs: Any) -> dict[str, Any]:
        """The camelCase JSON form, keeping nulls so readers see every field."""
        return self.model_dump(by_alias=True, mode="json", **kwargs)


class AgentSourceConfig(WireModel):
    """One logical agent source, as the host configures it. Strict: every field takes
    its own type only (`enabled = "false"` is an error, not True), and every string is
    one a program can be given (no NUL; environment names without `=`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)

    id: str
    driver: DriverKind
    enabled: bool = True
    command: list[str] | None = None
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    config_dir: str | None = None
    codex_bin: str | None = None
    codex_home: str | None = None
    codex_transport: CodexTransport = "stdio"
    codex_socket: str | None = None
    allow_danger_full_access: bool = False
    collect_on_one_cpu: bool = True  # a provider started only to collect runs on one CPU (drivers/one_cpu.py)
    max_line_bytes: int = Field(default=DEFAULT_MAX_LINE_BYTES, ge=MIN_MAX_LINE_BYTES, strict=True)
    stall_timeout_seconds: float = Field(
        default=DEFAULT_STALL_TIMEOUT_SECONDS, gt=0, allow_inf_nan=False, strict=True
    )

    @field_validator("command")
    @classmethod
    def _command_not_empty(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or not value[0]):
            raise ValueError("command must name a program")
        if value is not None and any("\0" in part for part in value):
            raise ValueError("an argument must not contain a NUL character")
        return value

    @field_validator("id", "cwd", "config_dir", "codex_bin", "codex_home", "codex_socket")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\0" in value:
            raise ValueError("must not contain a NUL character")
        return value

    @field_validator("env")
    @classmethod
    def _environment_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not name or "=" in name or "\0" in name:
                raise ValueError(f"{name!r} cannot be an environment variable name (empty, or holds '=' or NUL)")
            if "\0" in text:
                raise ValueError(f"the value of {name} must not contain a NUL character")
        return value


# The whitespace JavaScript's String.prototype.trim() removes: ids are trimmed the way
# the spec's TypeScript connector trims them, so keys agree across implementations.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def normalize_source_id(source_id: str) -> str:
    """Source ids are compared trimmed (JavaScript's whitespace set) and lowercased."""
    return source_id.strip(JS_WHITESPACE).lower()


class DriverCapabilities(WireModel):
    """What a driver can do. `start_session` is present only when True."""

    list_sessions: bool = False
    read_session: bool = False
    prompt: bool = False
    cancel: bool = False
    rename_session: bool = False
    set_mode: bool = False
    set_config_option: bool = False
    start_session: Literal[True] | None = None
    modes: list[str] = Field(default_factory=list)
    config_options: dict[str, Any] = Field(default_factory=dict)

    def to_wire(self, **kwargs: Any) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json", exclude_none=True, **kwargs)


class SourceDescriptor(WireModel):
    id: str
    driver: DriverKind
    provider_version: str | None = None
    capabilities: DriverCapabilities = Field(default_factory=DriverCapabilities)

    def to_wire(self, **kwargs: Any) -> dict[str, Any]:
        data = self.model_dump(by_alias=True, mode="json", exclude={"capabilities"}, **kwargs)
        data["capabilities"] = self.capabilities.to_wire()
        return data


class SessionSummary(WireModel):
    """Normalized inventory metadata. Every field but the id may be unknown (null)."""

    model_config = ConfigDict(defer_build=True)  # built on first use (DEFERRED_MODELS)

    native_session_id: str
    title: str | None = None
    cwd: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    archived: bool | None = None
    active: bool | None = None
    git_repo: str | None = None
    git_branch: str | None = None
    git_worktree_root: str | None = None
    started_as: str | None = None
    raw: dict[str, Any] = Field(default_factory=dict)

    @field_validator("native_session_id")
    @classmethod
    def _id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("nativeSessionId must not be empty")
        return value


class SessionPage(WireModel):
    model_config = ConfigDict(defer_build=True)  # built on first use (DEFERRED_MODELS)

    sessions: list[SessionSummary] = Field(default_factory=list)
    next_cursor: str | None = None


# `preview(text)` for a validated `str` (pydantic hands its validators an exact `str`,
# even for a subclass), as a C callable: the first PREVIEW_LIMIT characters, the string
# itself when it is no longer. A Python validator cost a frame per message (every read
# validates every message); a validator, not a `max_length` constraint, because a longer
# text is cut, not refused.
_BOUNDED_PREVIEW = operator.itemgetter(slice(None, PREVIEW_LIMIT))


class NormalizedMessage(WireModel):
    model_config = ConfigDict(defer_build=True)  # built on first use (DEFERRED_MODELS)

    id: str
    parent_id: str | None = None
    role: MessageRole
    kind: str
    timestamp: str | None = None
    text: Annotated[str, AfterValidator(_BOUNDED_PREVIEW)] = ""  # bounded as `preview` bounds it
    event_index: int


class NativeSessionSnapshot(WireModel):
    """One full read of a session: summary, native events, normalized view, completeness."""

    model_config = ConfigDict(defer_build=True)  # built on first use (DEFERRED_MODELS)

    summary: SessionSummary
    events: list[Any] = Field(default_factory=list)
    normalized_messages: list[NormalizedMessage] = Field(default_factory=list)
    complete: bool = True
    revision: str | None = None


class PromptInput(WireModel):
    model_config = ConfigDict(defer_build=True)  # built on first use (DEFERRED_MODELS)

    text: str


class StartInput(WireModel):
    model_config = ConfigDict(defer_build=True)  # built on first use (DEFERRED_MODELS)

    text: str
    cwd: str | None = None
    title: str | None = None
    mode: str | None = None


class CommandError(WireModel):
    model_config = ConfigDict(defer_build=True)  # built on first use (DEFERRED_MODELS)

    code: str
    message: str
    retryable: bool = False


class CommandExecutionResult(WireModel):
    model_config = ConfigDict(defer_build=True)  # built on first use (DEFERRED_MODELS)

    status: CommandStatus
    provider_operation_id: str | None = None
    result: dict[str, Any] | None = None
    error: CommandError | None = None

    def to_wire(self, **kwargs: Any) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json", exclude_none=True, **kwargs)

    @classmethod
    def unsupported(cls, operation: str, source_id: str) -> CommandExecutionResult:
        return cls(
            status="unsupported",
            error=CommandError(
                code="unsupported",
                message=f"{operation} is not supported by source {source_id}",
                retryable=False,
            ),
        )

    @classmethod
    def failure(
        cls, status: CommandStatus, code: str, message: str, *, retryable: bool = False
    ) -> CommandExecutionResult:
        return cls(status=status, error=CommandError(code=code, message=message, retryable=retryable))


@dataclass(frozen=True)
class CommandExecutionOptions:
    """The two prompt milestones a driver reports to the command worker.

    `on_cancellation_ready` is called as soon as `cancel()` can address the admitted
    prompt. `on_session_active` is called once the provider operation has started, and
    the prompt goes on when it returns; it refreshes the session while the activity is
    observable. Both are plain blocking calls, made on the driver's calling thread
    (never inside a driver's private event loop), like every driver method.
    """

    on_cancellation_ready: Callable[[], None] | None = None
    on_session_active: Callable[[], None] | None = None
    force: bool = False


def preview(text: str | None, limit: int = PREVIEW_LIMIT) -> str:
    """The bounded text preview every driver and index uses (one rule, one place)."""
    if not text:
        return ""
    return text if len(text) <= limit else text[:limit]

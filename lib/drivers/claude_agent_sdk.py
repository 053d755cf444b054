"""The Claude driver: inventory and reads through the Claude Agent SDK's session functions.

The SDK owns its on-disk session format; this module never opens a session file. It
calls `list_sessions`, `get_session_info` and `get_session_messages` (all synchronous,
all filesystem work) through `ClaudeSdkAdapter`, which gives them the source's
`configDir`. Those functions read `CLAUDE_CONFIG_DIR` from `os.environ` at call time and
take no environment argument, so the adapter sets it for the length of one call, under
one process-wide lock, and puts back what was there (the spec's "short serialized
environment change", allowed for these inventory calls only; prompts will get an
explicit environment object instead).

Inventory: pages of 100, the cursor is the decimal offset of the page's first session in
the SDK's listing (newest file first), served from one whole listing taken at offset 0
(`ListingSnapshot` in claude_listing.py says why). A source with `cwd` lists that project directory
and, when it is inside a Git repository, its worktrees (the SDK's `include_worktrees`);
never its subdirectories, which the SDK keys as projects of their own. Without `cwd`,
every project directory under `<configDir>/projects`.

`active` is true only for a session on which a prompt this driver started is running,
sampled when a list or read starts; otherwise null, never false (another process may be
using the conversation). Prompts are not built yet, so no session is active; the set is
where they will register.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from lib.drivers.base import AgentDriver, CancelSignal, DriverError, DriverUnavailable
from lib.drivers.child_channels import report_provider_output
from lib.drivers.claude_listing import ListingSnapshot
from lib.drivers.codex_threads import iso_time
from lib.types import (
    AgentSourceConfig,
    DriverCapabilities,
    NativeSessionSnapshot,
    NormalizedMessage,
    SessionPage,
    SessionSummary,
    preview,
)

PAGE_SIZE = 100
CONFIG_DIR_VARIABLE = "CLAUDE_CONFIG_DIR"
# Claude records `gitBranch: "HEAD"` outside a repository and on a detached HEAD: no branch.
NO_BRANCH = "HEAD"
_DECIMAL = re.compile(r"0|[1-9][0-9]*")

# One lock for every Claude source in the process: the environment is process-wide.
_ENVIRONMENT_LOCK = threading.Lock()

_T = TypeVar("_T")


@contextmanager
def _environment(name: str, value: str | None) -> Iterator[None]:
    """`os.environ[name] = value` (None: left as it is) for the block, under the
    process-wide lock; the previous value (or its absence) comes back afterwards."""
    if value is None:
        yield
        return
    with _ENVIRONMENT_LOCK:
        previous = os.environ.get(name)
        os.environ[name] = value
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous


class ClaudeSdkAdapter:
    """The SDK operations the driver uses, each given the source's configuration directory.

    `config_dir` None means the SDK's own default (this process's `CLAUDE_CONFIG_DIR`,
    else `~/.claude`). The SDK is imported when the adapter is made: it is large (it
    bundles the Claude Code CLI) and only Claude sources need it.
    """

    def __init__(self, config_dir: str | None) -> None:
        try:
            import claude_agent_sdk
            from claude_agent_sdk._cli_version import __cli_version__
        except ImportError as exc:
            raise DriverUnavailable(
                "sdk-not-installed",
                f"the Claude Agent SDK (Python package claude-agent-sdk) cannot be imported: {exc}",
            ) from None
        self._sdk = claude_agent_sdk
        self.config_dir = config_dir
        self.cli_version: str | None = __cli_version__

    def _call(self, function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        with _environment(CONFIG_DIR_VARIABLE, self.config_dir):
            return function(*args, **kwargs)

    def list_sessions(self, *, limit: int | None, offset: int, directory: str | None) -> list[Any]:
        return self._call(self._sdk.list_sessions, directory=directory, limit=limit, offset=offset,
                          include_worktrees=True)

    def get_session_info(self, session_id: str, directory: str | None) -> Any | None:
        return self._call(self._sdk.get_session_info, session_id, directory=directory)

    def get_session_messages(self, session_id: str, directory: str | None) -> list[Any]:
        # The Python SDK has no includeSystemMessages: it returns the user and assistant
        # messages of the conversation chain only.
        return self._call(self._sdk.get_session_messages, session_id, directory=directory)


def config_dir_of(config: AgentSourceConfig) -> str | None:
    """`configDir`, else a `CLAUDE_CONFIG_DIR` in the source's `env`, else None (the SDK's
    default)."""
    return config.config_dir or config.env.get(CONFIG_DIR_VARIABLE) or None


def parse_offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not isinstance(cursor, str) or not _DECIMAL.fullmatch(cursor):
        raise DriverError(
            "invalid-cursor",
            f"cursor {cursor!r} is not one this driver made: expected a decimal offset such as '100'",
        )
    return int(cursor)


class ClaudeAgentSdkDriver(AgentDriver):
    driver_kind = "claude-agent-sdk"

    def __init__(
        self,
        config: AgentSourceConfig,
        *,
        page_size: int = PAGE_SIZE,
        adapter: ClaudeSdkAdapter | None = None,
    ) -> None:
        super().__init__(config)
        self.page_size = page_size
        self._adapter = adapter
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False
        # Native session id -> prompts this driver started and that are still running.
        # Empty until prompts are built; `active` is read from it.
        self._running: dict[str, int] = {}
        self._listing = ListingSnapshot()

    @classmethod
    def initial_capabilities(cls) -> DriverCapabilities:
        return DriverCapabilities(list_sessions=True, read_session=True)

    # -- lifecycle -------------------------------------------------------------------

    def start(self, signal: CancelSignal | None = None) -> None:
        if signal is not None:
            signal.raise_if_cancelled()
        if self._adapter is None:
            self._adapter = ClaudeSdkAdapter(config_dir_of(self.config))
        self.source.provider_version = self._adapter.cli_version
        with self._lock:
            self._started = True

    def stop(self) -> None:
        with self._lock:
            self._stopped = True

    @property
    def adapter(self) -> ClaudeSdkAdapter:
        with self._lock:
            if self._stopped:
                raise DriverError("driver-stopped", f"the Claude driver of source {self.source.id} was stopped")
            if not self._started or self._adapter is None:
                raise DriverError("driver-not-started", f"the Claude driver of source {self.source.id} was not started")
            return self._adapter

    # -- inventory and reads ---------------------------------------------------------

    def list_sessions(self, cursor: str | None = None) -> SessionPage:
        offset = parse_offset(cursor)
        adapter = self.adapter
        owned = self._owned_sessions()  # sampled before the call, as for a read
        # One more than a page says whether another page follows without an empty last page.
        infos = None if offset == 0 else self._listing.page(offset, self.page_size + 1)
        if infos is None:
            # The first page takes the whole listing (the SDK reads every file for any
            # page); a cursor the snapshot cannot serve asks the SDK for its page.
            limit = None if offset == 0 else self.page_size + 1
            infos = self._provider_call(
                "list_sessions",
                lambda: adapter.list_sessions(limit=limit, offset=offset, directory=self.config.cwd),
            )
            if offset == 0:
                self._listing.replace(infos)
                infos = infos[: self.page_size + 1]
        page = infos[: self.page_size]
        sessions = [summary_from_info(info, active=info.session_id in owned) for info in page]
        self._listing.listed(sessions)
        more = len(infos) > self.page_size
        if not more:
            self._listing.finish()
        return SessionPage(sessions=sessions, next_cursor=str(offset + len(page)) if more else None)

    def read_session(self, native_session_id: str) -> NativeSessionSnapshot:
        adapter = self.adapter
        active = native_session_id in self._owned_sessions()  # sampled when the read starts
        directory = self.config.cwd
        listed = self._listing.take_summary(native_session_id)
        if listed is not None:  # a copy: the listing's caller holds the same object
            summary = listed.model_copy(update={"active": True if active else None})
        else:
            summary = summary_from_info(self._session_info(native_session_id), active=active)
        messages = self._provider_call(
            "get_session_messages", lambda: adapter.get_session_messages(native_session_id, directory)
        )
        if not messages:
            # No messages: an empty session, or one deleted since it was listed. Only
            # the SDK's information says which.
            summary = summary_from_info(self._session_info(native_session_id), active=active)
        events = [message_event(message) for message in messages]
        return NativeSessionSnapshot(
            summary=summary,
            events=events,
            normalized_messages=normalized_messages(events),
            complete=True,
        )

    # -- internals -------------------------------------------------------------------

    def _session_info(self, native_session_id: str) -> Any:
        """The SDK's information about a session; `session-not-found` when it has none."""
        adapter, directory = self.adapter, self.config.cwd
        info = self._provider_call(
            "get_session_info", lambda: adapter.get_session_info(native_session_id, directory)
        )
        if info is None:
            where = f"in {directory} or its worktrees" if directory else "in any project"
            raise DriverError(
                "session-not-found", f"Claude has no session {native_session_id} {where} (source {self.source.id})"
            )
        return info

    def _owned_sessions(self) -> set[str]:
        with self._lock:
            return {session for session, count in self._running.items() if count > 0}

    def _provider_call(self, name: str, call: Callable[[], _T]) -> _T:
        """One SDK call; anything it raises becomes a DriverError naming the call and the
        source (the SDK's own words are the detail, not the message: they can quote
        file content)."""
        try:
            return call()
        except DriverError:
            raise
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}"
            report_provider_output(f"the Claude Agent SDK's {name} (source {self.source.id})", detail)
            raise DriverError(
                "provider-error",
                f"the Claude Agent SDK's {name} failed for source {self.source.id} ({type(exc).__name__})",
                detail=detail,
            ) from None


# -- mapping -------------------------------------------------------------------------


def _first_line(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    for line in text.splitlines():
        if line.strip():
            return preview(line.strip())
    return None


def summary_from_info(info: Any, *, active: bool = False) -> SessionSummary:
    """An `SDKSessionInfo` as a summary. Title: the session's title (the user's, else the
    one Claude generated), else the SDK's display summary (last prompt, else first)."""
    raw = _plain(info)
    branch = info.git_branch if isinstance(info.git_branch, str) and info.git_branch != NO_BRANCH else None
    return SessionSummary(
        native_session_id=str(info.session_id),
        title=_first_line(info.custom_title) or _first_line(info.summary),
        cwd=info.cwd if isinstance(info.cwd, str) and info.cwd else None,
        created_at=iso_time(info.created_at),
        updated_at=iso_time(info.last_modified),
        archived=None,
        active=True if active else None,
        git_branch=branch,
        raw=raw,
    )


def message_event(message: Any) -> dict[str, Any]:
    """A `SessionMessage` as a native event: its fields as the SDK names them."""
    return _plain(message)


def _plain(value: Any) -> dict[str, Any]:
    """The record's fields by name. Shallow on purpose: the SDK parses every call's values
    afresh and keeps no reference to them, and `dataclasses.asdict`'s deep copy of each
    message's content was a third of a read's time."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: getattr(value, name) for name in _field_names(type(value))}
    if isinstance(value, dict):
        return dict(value)
    raise DriverError("provider-error", f"the Claude Agent SDK returned a {type(value).__name__}, not a record")


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(cls))


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "tool_use":
        return str(block.get("name") or "")
    if kind == "tool_result":
        return _content_text(block.get("content"))
    return ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text for text in (_block_text(block) for block in content) if text)
    return ""


def _only_tool_results(content: Any) -> bool:
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(block, dict) and block.get("type") == "tool_result" for block in content)
    )


def normalized_messages(events: list[dict[str, Any]]) -> list[NormalizedMessage]:
    """One message per event: id = its uuid, kind = its type (`user`, `assistant`), role
    from the type (a user message holding only tool results is `tool`), text from the
    content (text blocks, tool names, tool results). The SDK gives no timestamps."""
    messages: list[NormalizedMessage] = []
    seen: set[str] = set()
    for index, event in enumerate(events):
        kind = str(event.get("type") or "unknown")
        body = event.get("message")
        content = body.get("content") if isinstance(body, dict) else None
        message_id = str(event.get("uuid") or f"message-{index}")
        if message_id in seen:
            message_id = f"{message_id}/{index}"
        seen.add(message_id)
        if kind == "assistant":
            role = "assistant"
        elif kind == "user":
            role = "tool" if _only_tool_results(content) else "user"
        else:
            role = "other"
        # Built without validation: every field is made here with its type, and the
        # text is already a preview (validation was a quarter of a read's own time).
        messages.append(
            NormalizedMessage.model_construct(
                id=message_id,
                parent_id=None,
                role=role,
                kind=kind,
                timestamp=None,
                text=preview(_content_text(content)),
                event_index=index,
            )
        )
    return messages

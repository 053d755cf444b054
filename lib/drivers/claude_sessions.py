"""Claude sessions as agentctl sees them: `SDKSessionInfo` as a summary, `SessionMessage`s
as native events and normalized messages. Pure mapping, no SDK calls."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from lib.drivers.base import DriverError
from lib.drivers.codex_threads import iso_time
from lib.types import NormalizedMessage, SessionSummary, preview

# Claude records `gitBranch: "HEAD"` outside a repository and on a detached HEAD: no branch.
NO_BRANCH = "HEAD"


def _first_line(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    for line in text.splitlines():
        if line.strip():
            return preview(line.strip())
    return None


def summary_from_info(info: Any, *, active: bool = False, started_as: str | None = None) -> SessionSummary:
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
        started_as=started_as,
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
        # Validated construction: pydantic's model_construct is three times slower here.
        messages.append(
            NormalizedMessage(
                id=message_id,
                role=role,
                kind=kind,
                timestamp=None,
                text=preview(_content_text(content)),
                event_index=index,
            )
        )
    return messages

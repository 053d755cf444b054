"""Claude sessions as agentctl sees them: `SDKSessionInfo` as a summary, `SessionMessage`s
as native events and normalized messages. Pure mapping, no SDK calls.

Every read of every session passes through here, so the mapping is written for speed
(tests/bench/claude_bench.py holds it to the SDK's own functions in a bare loop): records
copied through their `__dict__`, normalized messages validated as one list, times
formatted by integer arithmetic. Outputs are exactly those of the plain versions.
"""

from __future__ import annotations

import dataclasses
import functools
from datetime import date
from typing import Any

from pydantic import TypeAdapter

from lib.drivers.base import DriverError
from lib.drivers.codex_threads import iso_time
from lib.types import NormalizedMessage, SessionSummary, preview

# Claude records `gitBranch: "HEAD"` outside a repository and on a detached HEAD: no branch.
NO_BRANCH = "HEAD"

# One validation for a read's messages instead of one per message.
_MESSAGES = TypeAdapter(list[NormalizedMessage])

# `_iso_ms` formats integer milliseconds from 1e11 (1973) up to 2**32 seconds (2106):
# there `iso_time`'s float division is exact to the microsecond, so both agree.
_MS_FLOOR = 100_000_000_000
_MS_CEILING = 2**32 * 1000
_DAY_MS = 86_400_000
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_PADDED = tuple(f"{n:02}" for n in range(60))  # formatting an int is most of the cost
_PADDED_MS = tuple(f"{n:03}" for n in range(1000))


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
    created, modified = info.created_at, info.last_modified
    updated_at = _iso_ms(modified)
    return SessionSummary(
        native_session_id=str(info.session_id),
        title=_first_line(info.custom_title) or _first_line(info.summary),
        cwd=info.cwd if isinstance(info.cwd, str) and info.cwd else None,
        # A session's first and last entries often share a millisecond: formatted once.
        created_at=updated_at if created == modified and type(created) is type(modified) else _iso_ms(created),
        updated_at=updated_at,
        archived=None,
        active=True if active else None,
        git_branch=branch,
        started_as=started_as,
        raw=raw,
    )


def _iso_ms(value: Any) -> str | None:
    """`iso_time(value)`, by integer arithmetic for the SDK's integer milliseconds (a
    third of the time of datetime's conversion and formatting)."""
    if type(value) is not int or not _MS_FLOOR < value < _MS_CEILING:
        return iso_time(value)
    day, millis = divmod(value, _DAY_MS)
    seconds, millis = divmod(millis, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{_day_text(day)}T{_PADDED[hours]}:{_PADDED[minutes]}:{_PADDED[seconds]}.{_PADDED_MS[millis]}Z"


@functools.lru_cache(maxsize=1024)
def _day_text(day: int) -> str:
    return date.fromordinal(_EPOCH_ORDINAL + day).isoformat()


def message_event(message: Any) -> dict[str, Any]:
    """A `SessionMessage` as a native event: its fields as the SDK names them."""
    return _plain(message)


def message_events(messages: list[Any]) -> list[dict[str, Any]]:
    """`message_event` of each message, the record type looked up once per run of
    messages of one type (a read's are all `SessionMessage`s)."""
    events: list[dict[str, Any]] = []
    known: type | None = None
    names: tuple[str, ...] | None = None
    for message in messages:
        if type(message) is not known:
            known, names = type(message), _field_names(type(message))
        attributes = getattr(message, "__dict__", None) if names is not None else None
        if attributes is not None and len(attributes) == len(names):  # see `_field_names`
            events.append(attributes.copy())
        else:
            events.append(_plain(message))
    return events


def _plain(value: Any) -> dict[str, Any]:
    """The record's fields by name. Shallow on purpose: the SDK parses every call's values
    afresh and keeps no reference to them, and `dataclasses.asdict`'s deep copy of each
    message's content was a third of a read's time."""
    names = _field_names(type(value))
    if names is not None:
        attributes = getattr(value, "__dict__", None)
        if attributes is not None and len(attributes) == len(names):  # see `_field_names`
            return attributes.copy()
        return {name: getattr(value, name) for name in names}
    if isinstance(value, dict):
        return dict(value)
    raise DriverError("provider-error", f"the Claude Agent SDK returned a {type(value).__name__}, not a record")


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """A dataclass's field names; None for any other type. Its `__init__` sets every
    field in order, so an instance dict with as many entries as the class has fields is
    the record itself, in field order (the fast path of `_plain` and `message_events`)."""
    if not dataclasses.is_dataclass(cls):
        return None
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
        if len(content) == 1:  # the usual assistant message: one block, nothing to join
            return _block_text(content[0])
        return "\n".join([text for text in map(_block_text, content) if text])
    return ""


def _only_tool_results(content: Any) -> bool:
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(block, dict) and block.get("type") == "tool_result" for block in content)
    )


def normalized_messages(events: list[dict[str, Any]]) -> list[NormalizedMessage]:
    """One message per event (see `normalized_rows`), validated as one list: pydantic's
    model_construct is three times slower than validating each message, and one list
    is cheaper than either."""
    return _MESSAGES.validate_python(normalized_rows(events))


def normalized_rows(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fields of each event's normalized message, to validate as `NormalizedMessage`s
    (a read validates them with its snapshot): id = its uuid, kind = its type (`user`,
    `assistant`), role from the type (a user message holding only tool results is
    `tool`), text from the content (text blocks, tool names, tool results). The SDK gives
    no timestamps."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, event in enumerate(events):
        kind = event.get("type") or "unknown"
        if type(kind) is not str:
            kind = str(kind)
        body = event.get("message")
        content = body.get("content") if isinstance(body, dict) else None
        message_id = event.get("uuid") or f"message-{index}"
        if type(message_id) is not str:
            message_id = str(message_id)
        if message_id in seen:
            message_id = f"{message_id}/{index}"
        seen.add(message_id)
        if kind == "assistant":
            role = "assistant"
        elif kind == "user":
            role = "tool" if type(content) is not str and _only_tool_results(content) else "user"
        else:
            role = "other"
        # The text is bounded by NormalizedMessage's own validator (`preview`).
        text = content if type(content) is str else _content_text(content)
        rows.append({"id": message_id, "role": role, "kind": kind, "timestamp": None, "text": text,
                     "eventIndex": index})
    return rows

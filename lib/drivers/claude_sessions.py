"""Claude sessions as agentctl sees them: `SDKSessionInfo` as a summary, `SessionMessage`s
as native events and normalized messages. Pure mapping, no SDK calls.

Every read of every session passes through here, so the mapping is written for speed
(tests/bench/claude_bench.py holds it to the SDK's own functions in a bare loop): records
taken through their `__dict__`, normalized messages validated with their snapshot and a
page's summaries as one list, times formatted by integer arithmetic. Outputs are exactly
those of the plain versions. Where lib._claude_rows (lib/_claude_rows.c) is built, the
events, the normalized rows and a summary's fields are made in C; it gives None for any
input it does not recognise, and the `reference_` functions here, which stay the
definition, make those (tests/drivers/test_claude_rows_speedups.py holds the two equal).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import types
from datetime import date
from typing import Any

from pydantic import TypeAdapter

from lib.drivers.base import DriverError
from lib.drivers.codex_threads import iso_time
from lib.types import NativeSessionSnapshot, NormalizedMessage, SessionSummary, preview

# Claude records `gitBranch: "HEAD"` outside a repository and on a detached HEAD: no branch.
NO_BRANCH = "HEAD"

# One validation for a read's messages, or a page's summaries, instead of one per item
# (a model's own constructor adds a Python call to each).
_MESSAGES = TypeAdapter(list[NormalizedMessage])
_SUMMARIES = TypeAdapter(list[SessionSummary])
_SNAPSHOT = TypeAdapter(NativeSessionSnapshot)

# `_iso_ms` formats integer milliseconds from 1e11 (1973) up to 2**32 seconds (2106):
# there `iso_time`'s float division is exact to the microsecond, so both agree.
_MS_FLOOR = 100_000_000_000
_MS_CEILING = 2**32 * 1000
_DAY_MS = 86_400_000
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
# Formatting an int is most of the cost: the pieces are looked up instead.
_PADDED = tuple(f"{n:02}" for n in range(60))
_PADDED_MS = tuple(f"{n:03}" for n in range(1000))
_HOURS_MINUTES = tuple(f"{h:02}:{m:02}" for h in range(24) for m in range(60))
_DAYS: dict[int, str] = {}

try:
    from lib import _claude_rows as ROWS
except ImportError:  # no compiler at install time: the references below do it all
    ROWS = None
if os.environ.get("AGENTCTL_PURE_PYTHON", "") not in ("", "0"):  # as for lib._speedups
    ROWS = None


def _first_line(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    for line in text.splitlines():
        if line.strip():
            return preview(line.strip())
    return None


def summary_from_info(info: Any, *, active: bool = False, started_as: str | None = None) -> SessionSummary:
    """An `SDKSessionInfo` as a summary (`summary_fields`, validated)."""
    return _SUMMARIES.validate_python([summary_fields(info, active=active, started_as=started_as)])[0]


def summaries(fields: list[dict[str, Any]]) -> list[SessionSummary]:
    """A page's `summary_fields`, validated as one list (cheaper than one call each)."""
    return _SUMMARIES.validate_python(fields)


def summary_fields(info: Any, *, active: bool = False, started_as: str | None = None) -> dict[str, Any]:
    """`reference_summary_fields`, in C where lib._claude_rows recognises the record."""
    if ROWS is not None and (count := _record_size(type(info))) is not None:
        fields = ROWS.summary_fields(info, type(info), count, active, started_as)
        if fields is not None:
            return fields
    return reference_summary_fields(info, active=active, started_as=started_as)


def reference_summary_fields(info: Any, *, active: bool = False, started_as: str | None = None) -> dict[str, Any]:
    """The wire fields of an `SDKSessionInfo`'s summary, to validate as a `SessionSummary`.
    Title: the session's title (the user's, else the one Claude generated), else the SDK's
    display summary (last prompt, else first). Always the same keys (the summary's set
    fields): every field but git_repo and git_worktree_root."""
    # Validation copies the dict, so the record's own instance dict is enough here.
    raw = _fields_of(info)
    session_id, branch, cwd = info.session_id, info.git_branch, info.cwd
    created, modified = info.created_at, info.last_modified
    updated_at = _iso_ms(modified)
    return {
        "nativeSessionId": session_id if type(session_id) is str else str(session_id),
        "title": _first_line(info.custom_title) or _first_line(info.summary),
        "cwd": cwd if isinstance(cwd, str) and cwd else None,
        # A session's first and last entries often share a millisecond: formatted once.
        "createdAt": updated_at if created == modified and type(created) is type(modified) else _iso_ms(created),
        "updatedAt": updated_at,
        "archived": None,
        "active": True if active else None,
        "gitBranch": branch if isinstance(branch, str) and branch != NO_BRANCH else None,
        "startedAs": started_as,
        "raw": raw,
    }


def _iso_ms(value: Any) -> str | None:
    """`iso_time(value)`, by integer arithmetic for the SDK's integer milliseconds (a
    fraction of the time of datetime's conversion and formatting)."""
    if type(value) is not int or not _MS_FLOOR < value < _MS_CEILING:
        return iso_time(value)
    day, millis = divmod(value, _DAY_MS)
    minute, millis = divmod(millis, 60_000)
    second, millis = divmod(millis, 1000)
    day_text = _DAYS.get(day) or _day_text(day)
    return f"{day_text}T{_HOURS_MINUTES[minute]}:{_PADDED[second]}.{_PADDED_MS[millis]}Z"


def _day_text(day: int) -> str:
    """A day's date, kept for the next time (a listing's sessions share few days)."""
    if len(_DAYS) >= 4096:
        _DAYS.clear()
    text = _DAYS[day] = date.fromordinal(_EPOCH_ORDINAL + day).isoformat()
    return text


def message_event(message: Any) -> dict[str, Any]:
    """A `SessionMessage` as a native event: its fields as the SDK names them."""
    return _plain(message)


def message_events(messages: list[Any]) -> list[dict[str, Any]]:
    """Each message's native event: `message_event`'s fields, but a record's own instance
    dict rather than a copy of it. The SDK parses a call's messages afresh and drops its
    records once it returns them, so the dict is the event's alone (as `message_event`'s
    copy of it would be). The record type is looked up once per run of messages of one
    type (a read's are all `SessionMessage`s)."""
    if ROWS is not None and type(messages) is list and messages:
        cls = type(messages[0])
        if (count := _record_size(cls)) is not None:
            events = ROWS.record_dicts(messages, cls, count)
            if events is not None:
                return events
    return reference_message_events(messages)


def reference_message_events(messages: list[Any]) -> list[dict[str, Any]]:
    """`message_events` in Python: the definition lib._claude_rows follows."""
    events: list[dict[str, Any]] = []
    known: type | None = None
    names: tuple[str, ...] | None = None
    for message in messages:
        if type(message) is not known:
            known, names = type(message), _field_names(type(message))
        attributes = getattr(message, "__dict__", None) if names is not None else None
        if attributes is not None and len(attributes) == len(names):  # see `_field_names`
            events.append(attributes)
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


def _fields_of(value: Any) -> dict[str, Any]:
    """`_plain(value)`, but a record's own instance dict rather than a copy of it: for a
    caller whose validation copies the dict anyway."""
    names = _field_names(type(value))
    if names is not None:
        attributes = getattr(value, "__dict__", None)
        if attributes is not None and len(attributes) == len(names):  # see `_field_names`
            return attributes
    return _plain(value)


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """A dataclass's field names; None for any other type. Its `__init__` sets every
    field in order, so an instance dict with as many entries as the class has fields is
    the record itself, in field order (the fast path of `_plain` and `message_events`)."""
    if not dataclasses.is_dataclass(cls):
        return None
    return tuple(field.name for field in dataclasses.fields(cls))


@functools.cache
def _record_size(cls: type) -> int | None:
    """The number of a dataclass's fields when `getattr(record, "__dict__")` of its
    instances is the standard instance dict (what lib._claude_rows reads in C); None
    for any other type, which the Python path takes."""
    names = _field_names(cls)
    if names is None or cls.__getattribute__ is not object.__getattribute__:
        return None
    for klass in cls.__mro__:
        if "__dict__" in vars(klass):
            descriptor = vars(klass)["__dict__"]
            standard = type(descriptor) is types.GetSetDescriptorType and descriptor.__objclass__ is klass
            return len(names) if standard else None
    return None


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


def snapshot(summary: SessionSummary, events: list[dict[str, Any]], rows: list[dict[str, Any]]) -> NativeSessionSnapshot:
    """A complete read: the summary, the events and their `normalized_rows`, validated in
    one call (the messages with the snapshot)."""
    return _SNAPSHOT.validate_python({"summary": summary, "events": events, "normalizedMessages": rows, "complete": True})


def normalized_messages(events: list[dict[str, Any]]) -> list[NormalizedMessage]:
    """One message per event (see `normalized_rows`), validated as one list: pydantic's
    model_construct is three times slower than validating each message, and one list
    is cheaper than either."""
    return _MESSAGES.validate_python(normalized_rows(events))


def normalized_rows(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`reference_normalized_rows`, in C where lib._claude_rows recognises every event."""
    if ROWS is not None:
        rows = ROWS.normalized_rows(events)
        if rows is not None:
            return rows
    return reference_normalized_rows(events)


def reference_normalized_rows(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
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
        # The text is bounded by NormalizedMessage's own validator (`preview`).
        if type(content) is str:
            text = content
            role = "assistant" if kind == "assistant" else "user" if kind == "user" else "other"
        else:
            if (type(content) is list and len(content) == 1 and type(block := content[0]) is dict
                    and block.get("type") == "text" and type(block_text := block.get("text")) is str):
                text = block_text  # the usual assistant message: `_content_text` without its calls
            else:
                text = _content_text(content)
            if kind == "assistant":
                role = "assistant"
            elif kind == "user":
                role = "tool" if _only_tool_results(content) else "user"
            else:
                role = "other"
        rows.append({"id": message_id, "role": role, "kind": kind, "timestamp": None, "text": text,
                     "eventIndex": index})
    return rows

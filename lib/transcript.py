"""One published session as a transcript for people: a header, then every message.

`render_transcript(manifest, row)` is a pure function, a session manifest (as
`SessionReader.manifest` returns it) and optionally its index row in, lines of text
out, with no terminal I/O, so the command line and a host render the same transcript.

- The header: title, key, source and driver, directory, repository, branch, times,
  status (the row's, when given), message and event counts. The row's summary fields
  win over the manifest's: a retained session's row carries the current Git context.
- Each message: its role (and kind, for anything but user and assistant messages) and
  its time, then its text indented and wrapped to `width`. Times are UTC; a message
  shows its date only when it differs from the message before.
- Tool, system and other messages longer than `fold_after` + 1 lines are folded to
  their first `fold_after` lines and `… (K more lines)`. User and assistant messages
  are shown whole (every normalized text is a preview of at most 500 characters).
- Text from providers is never trusted with the terminal: control characters and
  bidirectional overrides are shown as escapes (`\\x1b`), never sent as they are.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from lib.types import PREVIEW_LIMIT

DEFAULT_WIDTH = 80
MIN_WIDTH = 40
FOLD_AFTER = 8
INDENT = "  "
LABEL_WIDTH = 10
CONVERSATION_ROLES = frozenset({"user", "assistant"})
SUMMARY_FIELDS = ("title", "cwd", "createdAt", "updatedAt", "archived", "active", "gitRepo", "gitBranch",
                  "gitWorktreeRoot")

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional embeddings,
# overrides and isolates that can make text read other than it is.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def render_transcript(
    manifest: Mapping[str, Any],
    row: Mapping[str, Any] | None = None,
    *,
    width: int = DEFAULT_WIDTH,
    fold_after: int = FOLD_AFTER,
) -> list[str]:
    """The transcript of one session, one string per line (no newlines)."""
    width = max(width, MIN_WIDTH)
    messages = [m for m in _messages(manifest) if isinstance(m, Mapping)]
    lines = header_lines(manifest, row, width=width, message_count=len(messages))
    previous_day: str | None = None
    for message in messages:
        label, previous_day = message_label(message, previous_day)
        lines.append("")
        lines.extend(_wrap(label, width))
        lines.extend(message_body(message, width=width, fold_after=fold_after))
    if not messages:
        lines.extend(["", "(no messages)"])
    return lines


def header_lines(
    manifest: Mapping[str, Any], row: Mapping[str, Any] | None = None, *, width: int = DEFAULT_WIDTH,
    message_count: int | None = None,
) -> list[str]:
    summary = _summary(manifest, row)
    title = clean(summary.get("title") or "") or "(untitled session)"
    title_lines = _wrap(title, width)
    lines = [*title_lines, "=" * min(width, max(len(line) for line in title_lines))]
    source = clean(str(manifest.get("sourceId") or (row or {}).get("sourceId") or "(unknown)"))
    driver = manifest.get("driver") or (row or {}).get("driver")
    if message_count is None:
        message_count = sum(isinstance(m, Mapping) for m in _messages(manifest))
    fields: list[tuple[str, str | None]] = [
        ("key", clean(str(manifest.get("key") or (row or {}).get("key") or "(unknown)"))),
        ("source", f"{source} ({clean(str(driver))})" if driver else source),
        ("directory", clean(summary.get("cwd") or "") or "(unknown)"),
        ("repository", clean(summary["gitRepo"]) if summary.get("gitRepo") else None),
        ("branch", _branch(summary)),
        ("created", format_time(summary.get("createdAt"))),
        ("updated", format_time(summary.get("updatedAt"))),
        ("observed", format_time(manifest.get("observedAt") or (row or {}).get("observedAt"))),
        ("status", _status(manifest, row, summary)),
        ("messages", str(message_count)),
        ("events", _events(manifest.get("chunks"))),
    ]
    for name, value in fields:
        if value is not None:
            lines.extend(_wrap(value, width, first=f"{name:<{LABEL_WIDTH}} ", rest=" " * (LABEL_WIDTH + 1)))
    return lines


def message_label(message: Mapping[str, Any], previous_day: str | None = None) -> tuple[str, str | None]:
    """`role · kind · time` and the day it names (the date shows only when it changes)."""
    role = clean(str(message.get("role") or "unknown"))
    parts = [role]
    kind = message.get("kind")
    if kind and role not in CONVERSATION_ROLES:
        parts.append(clean(str(kind)))
    moment = _parse_time(message.get("timestamp"))
    day = previous_day
    if moment is not None:
        day = moment.strftime("%Y-%m-%d")
        parts.append(moment.strftime("%H:%M:%S") if day == previous_day else f"{day} {moment:%H:%M:%S}")
    elif message.get("timestamp"):
        parts.append(clean(str(message["timestamp"])))
    return " · ".join(parts), day


def message_body(message: Mapping[str, Any], *, width: int = DEFAULT_WIDTH, fold_after: int = FOLD_AFTER) -> list[str]:
    """The message's text, indented, wrapped, and folded when it is long tool output."""
    text = message.get("text")
    text = text if isinstance(text, str) else ""
    lines = [clean(line).rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    if not lines:
        return [f"{INDENT}(no text)"]
    hidden = 0
    role = message.get("role")
    if role not in CONVERSATION_ROLES and len(lines) > fold_after + 1:
        hidden = len(lines) - max(fold_after, 1)
        lines = lines[: max(fold_after, 1)]
    out: list[str] = []
    for line in lines:
        out.extend(_wrap(line, width, first=INDENT, rest=INDENT) if line else [""])
    if hidden:
        out.append(f"{INDENT}… ({hidden} more lines)")
    elif len(text) >= PREVIEW_LIMIT:
        out.append(f"{INDENT}… (the published text stops at {PREVIEW_LIMIT} characters)")
    return out


def format_time(value: Any) -> str:
    """`2026-02-10 14:00:00 UTC`; the value as it is when it is no ISO time."""
    moment = _parse_time(value)
    if moment is not None:
        return f"{moment:%Y-%m-%d %H:%M:%S} UTC"
    return clean(str(value)) if value not in (None, "") else "(unknown)"


def clean(text: str) -> str:
    """Text safe to show on a terminal: unsafe characters become visible escapes."""
    return _UNSAFE.sub(_escape, text.expandtabs()) if isinstance(text, str) else ""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _messages(manifest: Mapping[str, Any]) -> Sequence[Any]:
    normalized = manifest.get("normalized")
    messages = normalized.get("messages") if isinstance(normalized, Mapping) else None
    return messages if isinstance(messages, Sequence) and not isinstance(messages, str) else ()


def _summary(manifest: Mapping[str, Any], row: Mapping[str, Any] | None) -> dict[str, Any]:
    summary = manifest.get("summary")
    merged = dict(summary) if isinstance(summary, Mapping) else {}
    for name in SUMMARY_FIELDS:
        if row is not None and name in row:
            merged[name] = row[name]
    return merged


def _branch(summary: Mapping[str, Any]) -> str:
    if summary.get("gitBranch"):
        return clean(str(summary["gitBranch"]))
    return "(detached HEAD)" if summary.get("gitWorktreeRoot") else "(none)"


def _status(manifest: Mapping[str, Any], row: Mapping[str, Any] | None, summary: Mapping[str, Any]) -> str:
    parts = []
    status = (row or {}).get("status")
    if status:
        deleted_at = (row or {}).get("deletedAt")
        parts.append(f"{status} ({format_time(deleted_at)})" if status == "deleted" and deleted_at else str(status))
    if manifest.get("complete") is False and status != "partial":
        parts.append("snapshot incomplete")
    elif not status and manifest.get("complete") is True:
        parts.append("snapshot complete")
    parts.extend(name for name in ("archived", "active") if summary.get(name) is True)
    return clean(", ".join(parts)) or "(unknown)"


def _events(chunks: Any) -> str | None:
    if not isinstance(chunks, Sequence) or isinstance(chunks, str) or not chunks:
        return None
    descriptors = [c for c in chunks if isinstance(c, Mapping)]
    count = sum(c.get("eventCount") or 0 for c in descriptors if isinstance(c.get("eventCount"), int))
    size = sum(c.get("byteLength") or 0 for c in descriptors if isinstance(c.get("byteLength"), int))
    parts = "1 chunk" if len(descriptors) == 1 else f"{len(descriptors)} chunks"
    return f"{count} in {parts}, {_size(size)}"


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _wrap(text: str, width: int, *, first: str = "", rest: str = "") -> list[str]:
    return textwrap.wrap(
        text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False,
        replace_whitespace=False, drop_whitespace=True,
    ) or [first.rstrip()]

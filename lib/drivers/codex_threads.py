"""Codex thread objects to provider-neutral summaries, snapshots and cursors.

Event unit: one native event per Codex *turn*, kept whole (its items, status, error,
times). A turn is the provider's own unit of history with a stable id, and a new prompt
appends one turn without touching earlier ones, so earlier event chunks keep their hashes.
Items are not events of their own: legacy threads number them `item-1`, `item-2`, ...
when read, and a turn's items only make sense with its status.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from lib.drivers.base import DriverError
from lib.drivers.codex_list_params import (  # noqa: F401 - the driver and tests take them from here
    ACTIVE_PREFIX,
    ARCHIVED_PREFIX,
    ARCHIVED_START,
    SOURCE_KINDS,
    list_params,
    next_cursor,
    page_follows,
    parse_cursor,
)
from lib.git_context import sanitize_remote_url
from lib.types import NativeSessionSnapshot, NormalizedMessage, SessionPage, SessionSummary, preview

INACTIVE_STATUSES = {"idle", "notLoaded", "systemError"}
TOOL_ITEMS = {
    "commandExecution", "fileChange", "mcpToolCall", "dynamicToolCall", "collabAgentToolCall",
    "webSearch", "imageView", "imageGeneration", "functionCallOutput",
}


def page_from_list(result: dict[str, Any], *, archived: bool, owned: set[str]) -> SessionPage:
    """A `thread/list` answer as a page of summaries (`owned`: threads this driver is
    running a turn in, taken before the request)."""
    sessions = [
        summary_from_thread(thread, archived=archived, active_override=thread.get("id") in owned)
        for thread in result.get("data") or []
        if isinstance(thread, dict) and thread.get("id")
    ]
    return SessionPage(sessions=sessions, next_cursor=next_cursor(archived, result.get("nextCursor")))


def iso_time(value: Any) -> str | None:
    """Epoch seconds (or milliseconds, when > 1e11) as `YYYY-MM-DDTHH:MM:SS.mmmZ`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    seconds = value / 1000 if abs(value) > 1e11 else value
    try:
        moment = datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    # isoformat (in C) is several times faster than strftime, and pads every year to four digits
    return moment.isoformat(timespec="milliseconds")[:-6] + "Z"


def lifecycle_active(thread: dict[str, Any]) -> bool | None:
    status = thread.get("status")
    kind = status.get("type") if isinstance(status, dict) else status
    if kind == "active":
        return True
    if kind in INACTIVE_STATUSES:
        return False
    return None


def _title(thread: dict[str, Any]) -> str | None:
    name = thread.get("name")
    if isinstance(name, str) and name.strip():
        return preview(name.strip())
    text = thread.get("preview")
    if isinstance(text, str) and text.strip():
        return preview(text.strip().splitlines()[0])
    return None


def summary_from_thread(
    thread: dict[str, Any], *, archived: bool | None, active_override: bool = False
) -> SessionSummary:
    """`archived` is the thread's own field when present, else what the caller knows."""
    raw = _raw_thread(thread)
    own_archived = thread.get("archived")
    cwd = thread.get("cwd")
    return SessionSummary(
        native_session_id=str(thread["id"]),
        title=_title(thread),
        cwd=cwd if isinstance(cwd, str) else None,
        created_at=iso_time(thread.get("createdAt")),
        updated_at=iso_time(thread.get("updatedAt")),
        archived=own_archived if isinstance(own_archived, bool) else archived,
        active=True if active_override else lifecycle_active(thread),
        raw=raw,
    )


def rollout_bytes(summary: SessionSummary) -> int | None:
    """The size of the thread's rollout file (`path` as thread/list gave it), which is what
    Codex reads to answer thread/read; None when it has no path or the file cannot be seen."""
    path = summary.raw.get("path")
    if not isinstance(path, str) or not path:
        return None
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return None


def _raw_thread(thread: dict[str, Any]) -> dict[str, Any]:
    """The thread without its turns, and without the credentials Codex keeps in the origin
    URL it recorded (`gitInfo.originUrl`): sanitized like every published remote."""
    raw = {key: value for key, value in thread.items() if key != "turns"}
    git_info = raw.get("gitInfo")
    if isinstance(git_info, dict) and "originUrl" in git_info:
        url = git_info["originUrl"]
        raw["gitInfo"] = {**git_info, "originUrl": sanitize_remote_url(url) if isinstance(url, str) else None}
    return raw


def _item_text(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind == "userMessage":
        parts = item.get("content") or []
        return "\n".join(
            part.get("text", "") for part in parts if isinstance(part, dict) and part.get("type") == "text"
        )
    if kind in ("agentMessage", "plan"):
        return str(item.get("text") or "")
    if kind == "reasoning":
        return "\n".join(str(part) for part in (item.get("summary") or []))
    if kind == "commandExecution":
        return str(item.get("command") or "")
    if kind == "fileChange":
        changes = item.get("changes") or []
        return "\n".join(str(c.get("path", "")) for c in changes if isinstance(c, dict))
    if kind in ("mcpToolCall", "dynamicToolCall"):
        return str(item.get("tool") or item.get("name") or "")
    if kind == "webSearch":
        return str(item.get("query") or "")
    return ""


def _role(kind: str) -> str:
    if kind == "userMessage":
        return "user"
    if kind == "agentMessage":
        return "assistant"
    return "tool" if kind in TOOL_ITEMS else "other"


def normalized_messages(turns: list[Any]) -> list[NormalizedMessage]:
    messages: list[NormalizedMessage] = []
    seen: set[str] = set()
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict):
            continue
        turn_id = str(turn.get("id") or f"turn-{index}")
        turn_time = iso_time(turn.get("startedAt"))
        for position, item in enumerate(turn.get("items") or []):
            if not isinstance(item, dict):
                continue
            kind = str(item.get("type") or "unknown")
            item_id = str(item.get("id") or f"{turn_id}/{position}")
            if item_id in seen:  # ids are thread-unique in practice; keep them unique anyway
                item_id = f"{turn_id}/{item_id}"
            seen.add(item_id)
            messages.append(
                NormalizedMessage(
                    id=item_id,
                    role=_role(kind),
                    kind=kind,
                    timestamp=iso_time(item.get("startedAtMs")) or iso_time(item.get("completedAtMs")) or turn_time,
                    text=preview(_item_text(item)),
                    event_index=index,
                )
            )
    return messages


def snapshot_from_read(
    result: dict[str, Any], *, with_turns: bool, active_override: bool = False
) -> NativeSessionSnapshot:
    thread = result.get("thread")
    if not isinstance(thread, dict) or "id" not in thread:
        raise DriverError("provider-error", "thread/read answered without a thread")
    turns = list(thread.get("turns") or []) if with_turns else []
    read_state = result.get("readState")
    revision = read_state.get("revision") if isinstance(read_state, dict) else None
    complete = all(
        not isinstance(turn, dict) or turn.get("itemsView", "full") == "full" for turn in turns
    )
    return NativeSessionSnapshot(
        summary=summary_from_thread(thread, archived=None, active_override=active_override),
        events=turns,
        normalized_messages=normalized_messages(turns),
        complete=complete,
        revision=revision if isinstance(revision, str) else None,
    )

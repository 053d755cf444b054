"""Small session values for tests: snapshots with a few events, and their inventory pages."""

from __future__ import annotations

from typing import Any

from lib.types import NativeSessionSnapshot, NormalizedMessage, SessionPage, SessionSummary


def make_snapshot(
    native_session_id: str,
    *,
    events: int = 2,
    complete: bool = True,
    title: str | None = None,
    archived: bool | None = None,
    active: bool | None = None,
    updated_at: str | None = None,
    cwd: str | None = None,
) -> NativeSessionSnapshot:
    """A small snapshot with alternating user/assistant events and their messages."""
    roles = ("user", "assistant")
    native = [
        {"type": roles[i % 2], "id": f"{native_session_id}-e{i}", "text": f"message {i}"}
        for i in range(events)
    ]
    return NativeSessionSnapshot(
        summary=SessionSummary(
            native_session_id=native_session_id,
            title=title,
            cwd=cwd,
            updated_at=updated_at,
            archived=archived,
            active=active,
        ),
        events=native,
        normalized_messages=[message_for_event(event, i) for i, event in enumerate(native)],
        complete=complete,
    )


def message_for_event(event: dict[str, Any], index: int) -> NormalizedMessage:
    return NormalizedMessage(
        id=event["id"],
        role=event["type"],
        kind=event["type"],
        text=event["text"],
        event_index=index,
    )


def pages_of(
    summaries: list[SessionSummary], page_size: int | None
) -> dict[str | None, SessionPage]:
    """Split summaries into pages keyed by the cursor that fetches them (None first)."""
    size = page_size or max(len(summaries), 1)
    chunks = [summaries[i : i + size] for i in range(0, len(summaries), size)] or [[]]
    pages: dict[str | None, SessionPage] = {}
    for number, chunk in enumerate(chunks, start=1):
        cursor = None if number == 1 else f"page-{number}"
        following = f"page-{number + 1}" if number < len(chunks) else None
        pages[cursor] = SessionPage(sessions=chunk, next_cursor=following)
    return pages

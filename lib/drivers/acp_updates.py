"""ACP session updates: who records them, and what a read makes of them.

`UpdateLog` receives every `session/update` the agent sends (from `AgentStream`, on the
driver's loop, in arrival order). A load of a session opens a recording for it; every
update for that session until the load's response becomes one native event of the read,
as the agent sent it (the wire object, unparsed, so kinds the SDK does not know are kept
too). Updates that arrive after the response (agents send `available_commands_update`
and the like right after a load) belong to no read. Loads of one session are serialised
by the driver, so a session has at most one recording.

A connector-owned prompt records its session's updates too: a read while it runs
(the worker's refresh once the prompt has started) is made from them, not from a
`session/load`, which real agents do not expect in the middle of a turn (codex-acp can
then leave the turn unanswered). That read is `active` and not `complete`; the refresh
after the prompt's outcome loads the whole session again.

The normalized view: `user_message_chunk` is the user, `agent_message_chunk` and
`agent_thought_chunk` the assistant, `tool_call` / `tool_call_update` a tool, `plan` the
assistant's plan. Consecutive chunks of one kind (and one `messageId`, where the agent
gives one) are one message. Updates that are no part of the conversation (modes,
commands, session info, usage) give no message.
"""

from __future__ import annotations

import threading
from typing import Any

from lib.types import NativeSessionSnapshot, NormalizedMessage, SessionSummary, preview

CHUNK_ROLES = {"user_message_chunk": "user", "agent_message_chunk": "assistant",
               "agent_thought_chunk": "assistant"}
TOOL_KINDS = ("tool_call", "tool_call_update")


class UpdateLog:
    """Recordings by session id: the loads' (on the loop thread only), and those of
    connector-owned prompts, which a read made during the prompt also sees."""

    def __init__(self) -> None:
        self._recordings: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._prompts: dict[str, list[dict[str, Any]]] = {}  # sessions with a connector-owned prompt

    def record(self, session_id: str, update: dict[str, Any]) -> None:
        recording = self._recordings.get(session_id)
        if recording is not None:
            recording.append(update)
        with self._lock:
            prompt = self._prompts.get(session_id)
            if prompt is not None:
                prompt.append(update)

    def begin(self, session_id: str) -> list[dict[str, Any]]:
        recording: list[dict[str, Any]] = []
        self._recordings[session_id] = recording
        return recording

    def end(self, session_id: str) -> None:
        self._recordings.pop(session_id, None)

    def answered(self, method: str, session_id: str | None) -> None:
        """The agent answered a request (told by the stream in wire order): a load's
        answer ends its recording, whatever the agent sends next."""
        if method == "session/load" and session_id is not None:
            self.end(session_id)

    def watch(self, session_id: str) -> None:
        with self._lock:
            self._prompts[session_id] = []

    def watched(self, session_id: str) -> list[dict[str, Any]]:
        """What a running prompt's session has sent so far (a copy)."""
        with self._lock:
            return list(self._prompts.get(session_id) or [])

    def unwatch(self, session_id: str) -> int:
        """Stop recording a prompt's updates; how many arrived."""
        with self._lock:
            return len(self._prompts.pop(session_id, None) or [])


def summary_from_info(info: Any, *, started_as: str | None = None, active: bool | None = None) -> SessionSummary:
    """A listed `SessionInfo` (SDK type) as a summary; `raw` is its wire form."""
    raw = info.model_dump(mode="json", by_alias=True, exclude_none=True)
    return SessionSummary(
        native_session_id=info.session_id,
        title=info.title,
        cwd=info.cwd,
        updated_at=_iso(info.updated_at),
        active=active,
        started_as=started_as,
        raw=raw,
    )


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def snapshot_from_load(summary: SessionSummary, events: list[dict[str, Any]], *,
                       complete: bool = True) -> NativeSessionSnapshot:
    """A read: the summary (a title from `session_info_update` where the listing had
    none), the recorded updates as native events, and their normalized view."""
    title = summary.title
    updated_at = summary.updated_at
    for event in events:
        if event.get("sessionUpdate") == "session_info_update":
            if isinstance(event.get("title"), str):
                title = event["title"]
            if isinstance(event.get("updatedAt"), str):
                updated_at = event["updatedAt"]
    summary = summary.model_copy(update={"title": title, "updated_at": updated_at})
    return NativeSessionSnapshot(
        summary=summary, events=events, normalized_messages=normalized_messages(events), complete=complete
    )


def normalized_messages(events: list[dict[str, Any]]) -> list[NormalizedMessage]:
    messages: list[NormalizedMessage] = []
    texts: list[list[str]] = []  # the chunks of each message, joined at the end
    previous: tuple[str, Any] | None = None  # (kind, messageId) of the open chunk message
    for index, event in enumerate(events):
        kind = event.get("sessionUpdate")
        if not isinstance(kind, str):
            previous = None
            continue
        if kind in CHUNK_ROLES:
            key = (kind, event.get("messageId"))
            text = content_text(event.get("content"))
            if previous == key:
                texts[-1].append(text)
                continue
            previous = key
            message_id = event.get("messageId") if isinstance(event.get("messageId"), str) else f"event-{index}"
            messages.append(_message(message_id, CHUNK_ROLES[kind], kind, index))
            texts.append([text])
            continue
        previous = None
        if kind in TOOL_KINDS:
            tool_id = event.get("toolCallId")
            parts = [event.get("title") if isinstance(event.get("title"), str) else ""]
            if isinstance(event.get("status"), str):
                parts.append(f"[{event['status']}]")
            for item in event.get("content") or [] if isinstance(event.get("content"), list) else []:
                if isinstance(item, dict):
                    parts.append(content_text(item.get("content")) or str(item.get("path") or ""))
            message_id = f"{tool_id}#{index}" if isinstance(tool_id, str) else f"event-{index}"
            messages.append(_message(message_id, "tool", kind, index))
            texts.append([" ".join(p for p in parts if p)])
        elif kind == "plan":
            entries = event.get("entries") if isinstance(event.get("entries"), list) else []
            lines = [f"[{e.get('status')}] {e.get('content')}" for e in entries if isinstance(e, dict)]
            messages.append(_message(f"event-{index}", "assistant", kind, index))
            texts.append(["\n".join(lines)])
    for message, parts in zip(messages, texts, strict=True):
        message.text = preview("".join(parts) if message.kind in CHUNK_ROLES else parts[0])
    return messages


def _message(message_id: str, role: str, kind: str, index: int) -> NormalizedMessage:
    return NormalizedMessage(id=message_id, role=role, kind=kind, event_index=index)  # type: ignore[arg-type]


def content_text(block: Any) -> str:
    """The text of one ACP content block (text, a resource's text, a link's name)."""
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return block["text"]
    if kind == "resource" and isinstance(block.get("resource"), dict):
        text = block["resource"].get("text")
        return text if isinstance(text, str) else ""
    if kind == "resource_link":
        return str(block.get("name") or block.get("uri") or "")
    return ""

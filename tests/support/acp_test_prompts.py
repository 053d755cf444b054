"""One prompt turn of the ACP test agent: what it streams for a prompt's text.

Triggers (case-insensitive substrings of the prompt):
  "permission"  -> emits a tool_call and sends session/request_permission
  "slow"        -> streams 50 chunks (useful for cancel tests)
  "big"         -> one ~200 KB agent_message_chunk (framing / buffer tests)
  "tools"       -> emits tool_call + tool_call_update + plan
otherwise an echo of the text, word by word. `cancel` (set by session/cancel) ends the
turn with stopReason cancelled at the next chunk.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from acp.schema import AllowedOutcome, PermissionOption, PromptResponse, ToolCallUpdate

from tests.support.acp_test_sessions import now, text_content

Send = Callable[..., Awaitable[None]]  # send(session_id, update, record=True)


async def play_turn(send: Send, conn: Any, session_id: str, rec: dict[str, Any], text: str,
                    cancel: asyncio.Event, delay: float) -> PromptResponse:
    """Stream the turn's updates (recorded in `rec["history"]`) and answer it."""
    low = text.lower()
    rec["history"].append({"sessionUpdate": "user_message_chunk", "content": text_content(text)})
    if not rec.get("title"):
        rec["title"] = text[:40] or "(empty)"
        await send(session_id, {"sessionUpdate": "session_info_update", "title": rec["title"], "updatedAt": now()}, record=False)
    await send(session_id, {"sessionUpdate": "agent_thought_chunk", "content": text_content(f"Considering: {text[:30]}")})

    if "tools" in low or "permission" in low:
        tc = f"call-{uuid.uuid4().hex[:8]}"
        await send(session_id, {"sessionUpdate": "plan", "entries": [
            {"content": "Inspect files", "priority": "high", "status": "in_progress"},
            {"content": "Reply", "priority": "low", "status": "pending"}]})
        await send(session_id, {"sessionUpdate": "tool_call", "toolCallId": tc, "title": "Write notes.txt",
                                "kind": "edit", "status": "pending", "locations": [{"path": f"{rec['cwd']}/notes.txt"}]})
        if "permission" in low:
            resp = await conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id=tc, title="Write notes.txt", kind="edit", status="pending"),
                options=[
                    PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
                    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
                ],
            )
            outcome = resp.outcome
            if not isinstance(outcome, AllowedOutcome):  # DeniedOutcome == {"outcome":"cancelled"}
                await send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tc, "status": "failed"})
                return PromptResponse(stop_reason="cancelled")
            if outcome.option_id == "reject":
                await send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tc, "status": "failed",
                                        "content": [{"type": "content", "content": text_content("Rejected by user")}]})
            else:
                await send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tc, "status": "completed",
                                        "content": [{"type": "content", "content": text_content("wrote 1 line")}]})
        else:
            await send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tc, "status": "completed"})
        await send(session_id, {"sessionUpdate": "plan", "entries": [
            {"content": "Inspect files", "priority": "high", "status": "completed"},
            {"content": "Reply", "priority": "low", "status": "in_progress"}]})

    if "big" in low:
        words = ["x" * 200_000]
    elif "slow" in low:
        words = [f"w{i} " for i in range(50)]
    else:
        words = [w + " " for w in f"Echo: {text}".split()]
    for w in words:
        if cancel.is_set():
            return PromptResponse(stop_reason="cancelled")
        await send(session_id, {"sessionUpdate": "agent_message_chunk", "content": text_content(w)})
        if delay:
            try:
                await asyncio.wait_for(cancel.wait(), timeout=delay)
            except TimeoutError:
                pass
    if cancel.is_set():
        return PromptResponse(stop_reason="cancelled")
    used = sum(len(json.dumps(u)) for u in rec["history"]) // 4
    await send(session_id, {"sessionUpdate": "usage_update", "used": used, "size": 200_000}, record=False)
    return PromptResponse(stop_reason="end_turn")

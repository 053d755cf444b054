"""The ACP test agent's sessions: one JSON file each under <home>/sessions/, and the
demo sessions `--seed N` makes (ids seed-000...), each with a replayable history.

A session file holds `sessionId`, `cwd`, `title`, `updatedAt`, `mode`, `config`,
`history` (wire-form session updates), and optionally the controls it advertises
(`modes`, `optionIds`: tests/support/acp_test_controls.py).
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def text_content(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


class Store:
    """One JSON file per session under <home>/sessions/."""

    def __init__(self, home: Path) -> None:
        self.dir = home / "sessions"
        self.dir.mkdir(parents=True, exist_ok=True)

    def _path(self, session_id: str) -> Path:
        safe = "".join(c for c in session_id if c.isalnum() or c in "-_")
        return self.dir / f"{safe}.json"

    def get(self, session_id: str) -> dict[str, Any] | None:
        p = self._path(session_id)
        if not p.exists():
            return None
        return json.loads(p.read_text(encoding="utf-8"))

    def put(self, rec: dict[str, Any]) -> None:
        p = self._path(rec["sessionId"])
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(rec, indent=1), encoding="utf-8")
        tmp.replace(p)

    def all(self) -> list[dict[str, Any]]:
        out = []
        for p in self.dir.glob("*.json"):
            try:
                out.append(json.loads(p.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue
        return out

    def delete(self, session_id: str) -> None:
        self._path(session_id).unlink(missing_ok=True)


def seed_sessions(store: Store, n: int) -> None:
    if n <= 0 or store.all():
        return
    base = _dt.datetime(2025, 1, 1, tzinfo=_dt.UTC)
    for i in range(n):
        sid = f"seed-{i:03d}"
        cwd = "/tmp/project-a" if i % 2 == 0 else "/tmp/project-b"
        tc = f"call-{i}"
        history = [
            {"sessionUpdate": "user_message_chunk", "content": text_content(f"Hello #{i}")},
            {"sessionUpdate": "agent_thought_chunk", "content": text_content("Thinking about the greeting.")},
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": "Read README", "priority": "high", "status": "completed"},
                    {"content": "Answer", "priority": "medium", "status": "in_progress"},
                ],
            },
            {
                "sessionUpdate": "tool_call",
                "toolCallId": tc,
                "title": "Read README.md",
                "kind": "read",
                "status": "pending",
                "locations": [{"path": f"{cwd}/README.md"}],
                "rawInput": {"path": f"{cwd}/README.md"},
            },
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tc,
                "status": "completed",
                "content": [{"type": "content", "content": text_content("# README\n")}],
            },
            {"sessionUpdate": "agent_message_chunk", "content": text_content("Hi there, ")},
            {"sessionUpdate": "agent_message_chunk", "content": text_content(f"this is reply #{i}.")},
        ]
        store.put(
            {
                "sessionId": sid,
                "cwd": cwd,
                "title": f"Seeded session {i}",
                "updatedAt": (base + _dt.timedelta(hours=i)).isoformat().replace("+00:00", "Z"),
                "mode": "ask",
                "config": {"model": "fast", "verbose": False},
                "history": history,
            }
        )


"""A deterministic, Codex-like benchmark corpus of `snapshot` records.

Each session is a NativeSessionSnapshot whose events are Codex app-server turns
(research/codex-app-server.md section 5): userMessage items with nested content arrays,
agentMessage and reasoning items, commandExecution items with aggregated output and
command actions, fileChange items with diffs. Text is drawn from a word list in realistic
lengths, so the values have the shape (many small strings, repeated keys, some long text)
that the hash walk meets in real sessions.

Files are cached under tests/bench/.corpus/<profile>/ and regenerated when the corpus
version stamp changes.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CORPUS_VERSION = "3"
ROOT = Path(__file__).resolve().parent / ".corpus"

_WORDS = (
    "the a to of and in is for that with on this it be as are file test function return "
    "value error import self def class if else not none true false data path line run "
    "build check output input result config session event chunk hash key index cell link "
    "source driver manifest snapshot publish read write update delete list start cancel "
    "prompt mode option receipt ledger command worker host fabric space owner store "
    "should would could because then when where which while after before into from "
    "python pytest assert json dict str int bytes tuple lambda yield async await "
    "src/lib/module.py tests/test_module.py README.md Makefile pyproject.toml "
    "0 1 2 3 42 100 256 1024 ok fail passed failed warning info debug"
).split()


@dataclass(frozen=True)
class Profile:
    name: str
    small_sessions: int
    small_min_bytes: int
    small_max_bytes: int
    large_sessions: int
    large_bytes: int


FULL = Profile("full", 300, 20_000, 200_000, 2, 50_000_000)
QUICK = Profile("quick", 30, 20_000, 200_000, 1, 8_000_000)


class SessionGenerator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = 1_790_000_000_000

    def words(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choices(_WORDS, k=self.rng.randint(lo, hi)))

    def lines(self, lo: int, hi: int) -> str:
        n = self.rng.randint(lo, hi)
        return "\n".join(self.words(2, 14) for _ in range(n))

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def tick(self, ms: int) -> int:
        self.clock += self.rng.randint(1, ms)
        return self.clock

    def user_message(self) -> dict:
        return {
            "type": "userMessage",
            "id": self.uid(),
            "clientId": None,
            "content": [{"type": "text", "text": self.words(4, 120), "text_elements": []}],
            "startedAtMs": self.tick(50),
            "completedAtMs": self.tick(50),
        }

    def agent_message(self) -> dict:
        return {
            "type": "agentMessage",
            "id": f"msg_{self.rng.getrandbits(48):012x}",
            "text": self.lines(1, 12),
            "phase": None,
            "startedAtMs": self.tick(2000),
            "completedAtMs": self.tick(4000),
        }

    def reasoning(self) -> dict:
        return {
            "type": "reasoning",
            "id": f"rs_{self.rng.getrandbits(48):012x}",
            "summary": [self.words(8, 40) for _ in range(self.rng.randint(1, 3))],
            "content": [],
            "startedAtMs": self.tick(500),
            "completedAtMs": self.tick(1500),
        }

    def command(self) -> dict:
        path = self.rng.choice(_WORDS[-20:])
        out_lines = self.rng.choice((0, 2, 8, 30, 120))
        return {
            "type": "commandExecution",
            "id": f"call_{self.rng.getrandbits(64):016x}",
            "command": f"/bin/bash -lc '{self.words(2, 8)}'",
            "cwd": "/home/dev/work/agentctl",
            "status": self.rng.choice(("completed", "completed", "completed", "failed")),
            "aggregatedOutput": self.lines(out_lines, out_lines),
            "exitCode": self.rng.choice((0, 0, 0, 1, 2)),
            "durationMs": self.rng.randint(3, 30_000),
            "processId": str(self.rng.randint(1000, 99999)),
            "source": "agent",
            "commandActions": [
                {"type": "read", "command": f"sed -n 1,200p {path}", "name": path, "path": path}
                for _ in range(self.rng.randint(0, 2))
            ],
            "startedAtMs": self.tick(1000),
            "completedAtMs": self.tick(30_000),
        }

    def file_change(self) -> dict:
        return {
            "type": "fileChange",
            "id": f"call_{self.rng.getrandbits(64):016x}",
            "changes": [
                {
                    "path": f"/home/dev/work/agentctl/{self.rng.choice(_WORDS[-20:])}",
                    "kind": {"type": "update", "move_path": None},
                    "diff": "\n".join(
                        self.rng.choice("+- ") + self.words(2, 12)
                        for _ in range(self.rng.randint(3, 60))
                    ),
                }
                for _ in range(self.rng.randint(1, 3))
            ],
            "status": "completed",
            "startedAtMs": self.tick(200),
            "completedAtMs": self.tick(400),
        }

    def turn(self) -> dict:
        items = [self.user_message()]
        for _ in range(self.rng.randint(1, 14)):
            pick = self.rng.random()
            if pick < 0.45:
                items.append(self.command())
            elif pick < 0.65:
                items.append(self.reasoning())
            elif pick < 0.8:
                items.append(self.file_change())
            else:
                items.append(self.agent_message())
        items.append(self.agent_message())
        started = self.tick(1000) // 1000
        return {
            "id": self.uid(),
            "rootTurnId": None,
            "items": items,
            "itemsView": "full",
            "status": "completed",
            "error": None,
            "startedAt": started,
            "completedAt": started + self.rng.randint(1, 600),
            "durationMs": self.rng.randint(500, 600_000),
        }

    def session(self, index: int, target_bytes: int) -> dict:
        thread_id = self.uid()
        events: list[dict] = []
        messages: list[dict] = []
        size = 0
        while size < target_bytes:
            turn = self.turn()
            events.append(turn)
            size += len(json.dumps(turn, separators=(",", ":"), ensure_ascii=False).encode())
            for item in turn["items"]:
                if item["type"] in ("userMessage", "agentMessage"):
                    text = item["content"][0]["text"] if item["type"] == "userMessage" else item["text"]
                    messages.append(
                        {
                            "id": item["id"],
                            "parentId": turn["id"],
                            "role": "user" if item["type"] == "userMessage" else "assistant",
                            "kind": item["type"],
                            "timestamp": None,
                            "text": text[:500],
                            "eventIndex": len(events) - 1,
                        }
                    )
        created = events[0]["startedAt"]
        raw = {
            "id": thread_id,
            "sessionId": thread_id,
            "preview": messages[0]["text"][:80],
            "ephemeral": False,
            "modelProvider": "openai",
            "model": "gpt-5",
            "createdAt": created,
            "updatedAt": events[-1]["completedAt"],
            "status": {"type": "notLoaded"},
            "path": f"/home/dev/.codex/sessions/2026/07/01/rollout-{thread_id}.jsonl",
            "cwd": "/home/dev/work/agentctl",
            "cliVersion": "0.169.0",
            "source": "cli",
            "gitInfo": None,
            "name": f"session {index}",
        }
        return {
            "summary": {
                "nativeSessionId": thread_id,
                "title": f"session {index}",
                "cwd": raw["cwd"],
                "createdAt": str(created),
                "updatedAt": str(raw["updatedAt"]),
                "archived": False,
                "active": False,
                "raw": raw,
            },
            "events": events,
            "normalizedMessages": messages,
            "complete": True,
            "revision": f"initial:{thread_id}",
        }


def _sizes(profile: Profile) -> Iterator[int]:
    rng = random.Random(7)
    for _ in range(profile.small_sessions):
        yield rng.randint(profile.small_min_bytes, profile.small_max_bytes)
    for _ in range(profile.large_sessions):
        yield profile.large_bytes


def ensure(profile: Profile = FULL) -> Path:
    """Write (or reuse) the corpus file for `profile`; return its path."""
    folder = ROOT / profile.name
    data = folder / "snapshots.jsonl"
    stamp = folder / "VERSION"
    if stamp.exists() and stamp.read_text() == CORPUS_VERSION and data.exists():
        return data
    folder.mkdir(parents=True, exist_ok=True)
    tmp = data.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for index, target in enumerate(_sizes(profile)):
            record = {"record": "snapshot", "sourceId": "codex", "snapshot": SessionGenerator(index).session(index, target)}
            out.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False))
            out.write("\n")
    tmp.replace(data)
    stamp.write_text(CORPUS_VERSION)
    return data


if __name__ == "__main__":
    import sys

    chosen = QUICK if "--quick" in sys.argv else FULL
    print(ensure(chosen))

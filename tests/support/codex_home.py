"""Fixture Codex homes: hand-written threads in the legacy rollout format.

The real `codex app-server` lists and reads these files as it would its own (research
section 8: a `session_meta` line with id, timestamp, cwd, originator and cli_version, then
per turn `task_started`, the user and agent messages as `response_item` lines (what the
model sees on resume) and `event_msg` lines (what `thread/read` turns into items), and
`task_complete`). `updatedAt` comes from the file's mtime, so it is set with `os.utime`.
Paginated rollouts are never hand-written: they need Codex's SQLite projection.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

CLI_VERSION = "0.169.0"


@dataclass(frozen=True)
class FixtureTurn:
    id: str
    user: str
    agent: str | None = None
    at: datetime | None = None  # when the turn started; default: just after the previous line


@dataclass(frozen=True)
class FixtureThread:
    id: str
    created_at: datetime
    turns: tuple[FixtureTurn, ...]
    cwd: str = "/home/demo/project"
    updated_at: datetime | None = None
    archived: bool = False
    name: str | None = None
    source: str = "cli"
    model_provider: str = "openai"
    extra_meta: dict = field(default_factory=dict)


def uuid7_like(seed: int, when: datetime) -> str:
    """A deterministic UUIDv7-shaped id: Codex makes v7 ids, and tests want stable ones."""
    millis = int(when.timestamp() * 1000)
    tail = uuid.uuid5(uuid.NAMESPACE_URL, f"agentctl-fixture-{seed}").hex
    text = f"{millis:012x}7{tail[:3]}{'8' + tail[4:7]}{tail[7:19]}"
    return str(uuid.UUID(text))


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _rollout_lines(thread: FixtureThread) -> list[dict]:
    clock = thread.created_at
    tick = timedelta(milliseconds=1)
    meta = {
        "id": thread.id,
        "timestamp": _stamp(clock),
        "cwd": thread.cwd,
        "originator": "codex_cli_rs",
        "cli_version": CLI_VERSION,
        "source": thread.source,
        "model_provider": thread.model_provider,
        **thread.extra_meta,
    }
    lines = [{"timestamp": _stamp(clock), "type": "session_meta", "payload": meta}]

    def add(kind: str, payload: dict) -> None:
        nonlocal clock
        clock += tick
        lines.append({"timestamp": _stamp(clock), "type": kind, "payload": payload})

    for turn in thread.turns:
        if turn.at is not None and turn.at > clock:
            clock = turn.at
        add("event_msg", {"type": "task_started", "turn_id": turn.id,
                          "started_at": int(clock.timestamp())})
        add(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": turn.user}]},
        )
        add("event_msg", {"type": "user_message", "message": turn.user})
        if turn.agent is not None:
            add(
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": turn.agent}],
                },
            )
            add("event_msg", {"type": "agent_message", "message": turn.agent})
        add(
            "event_msg",
            {"type": "task_complete", "turn_id": turn.id, "last_agent_message": turn.agent,
             "completed_at": int(clock.timestamp())},
        )
    return lines


def rollout_path(home: Path, thread: FixtureThread) -> Path:
    created = thread.created_at.astimezone(UTC)
    name = f"rollout-{created.strftime('%Y-%m-%dT%H-%M-%S')}-{thread.id}.jsonl"
    if thread.archived:
        return home / "archived_sessions" / name
    return home / "sessions" / created.strftime("%Y/%m/%d") / name


def write_thread(home: Path, thread: FixtureThread) -> Path:
    path = rollout_path(home, thread)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for line in _rollout_lines(thread):
            out.write(json.dumps(line, separators=(",", ":")) + "\n")
    updated = thread.updated_at or thread.created_at
    os.utime(path, (updated.timestamp(), updated.timestamp()))
    return path


def make_codex_home(path: str | os.PathLike[str], threads: list[FixtureThread]) -> Path:
    """Write `threads` into a Codex home at `path` (created if missing) and return it."""
    home = Path(path)
    home.mkdir(parents=True, exist_ok=True)
    names = []
    for thread in threads:
        write_thread(home, thread)
        if thread.name:
            names.append({"id": thread.id, "thread_name": thread.name, "updated_at": _stamp(thread.created_at)})
    if names:
        with (home / "session_index.jsonl").open("a", encoding="utf-8") as out:
            for entry in names:
                out.write(json.dumps(entry) + "\n")
    config = home / "config.toml"
    if not config.exists():  # a test's own config (write_fake_model_config) carries them too
        config.write_text(OFFLINE_FEATURES, encoding="utf-8")
    return home


# Codex's plugins are off in every home the tests and benches make: with them on, Codex
# runs `git ls-remote https://github.com/openai/plugins` as it starts (strace, session
# 26), a network attempt tests must not make, and one whose time varied the bench's floor.
OFFLINE_FEATURES = "[features]\nplugins = false\n"


def write_fake_model_config(
    home: str | os.PathLike[str], base_url: str, *, approval_policy: str = "never"
) -> None:
    """Point Codex at a fake Responses API (research section 9); no login needed."""
    Path(home, "config.toml").write_text(
        f'model = "fake-model"\n'
        f'model_provider = "fake"\n'
        f'approval_policy = "{approval_policy}"\n'
        f'sandbox_mode = "read-only"\n\n'
        f"[model_providers.fake]\n"
        f'name = "fake"\n'
        f'base_url = "{base_url}"\n'
        f'wire_api = "responses"\n'
        f"request_max_retries = 0\n"
        f"stream_max_retries = 0\n\n" + OFFLINE_FEATURES,
        encoding="utf-8",
    )


def many_threads(count: int, *, start: datetime | None = None, turns: int = 2) -> list[FixtureThread]:
    """`count` small active threads a minute apart, for paging and benchmarks."""
    base = start or datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    threads = []
    for n in range(count):
        created = base + timedelta(minutes=n)
        thread_turns = tuple(
            FixtureTurn(
                id=uuid7_like(10_000 * (n + 1) + t, created),
                user=f"Question {t + 1} about module {n}",
                agent=f"Answer {t + 1} for module {n}.",
            )
            for t in range(turns)
        )
        threads.append(
            FixtureThread(id=uuid7_like(n, created), created_at=created, turns=thread_turns)
        )
    return threads


def demo_threads() -> list[FixtureThread]:
    """A small realistic set: active and archived, named and unnamed, several providers."""
    day = datetime(2026, 2, 10, 14, 0, tzinfo=UTC)

    def turn(seed: int, when: datetime, user: str, agent: str | None) -> FixtureTurn:
        return FixtureTurn(id=uuid7_like(seed, when), user=user, agent=agent, at=when)

    def at(hours: float) -> datetime:
        return day + timedelta(hours=hours)

    return [
        FixtureThread(
            id=uuid7_like(1, at(0)),
            created_at=at(0),
            updated_at=at(0.5),
            cwd="/home/demo/src/billing",
            name="Fix rounding in invoice totals",
            turns=(
                turn(101, at(0), "Invoice totals are off by a cent on some orders. Find out why.",
                     "The totals are summed as floats in `invoice.py`; switching to Decimal fixes it."),
                turn(102, at(0.2), "Make the change and add a test for 0.1 + 0.2.",
                     "Done: `Invoice.total` now uses Decimal and `test_total_is_exact` covers it."),
            ),
        ),
        FixtureThread(
            id=uuid7_like(2, at(3)),
            created_at=at(3),
            updated_at=at(3.2),
            cwd="/home/demo/src/website",
            turns=(
                turn(201, at(3), "Why does the build warn about an unused import in nav.ts?\n"
                     "It started after the last merge.",
                     "`Link` is imported but only used in a comment; remove the import."),
            ),
        ),
        FixtureThread(
            id=uuid7_like(3, at(6)),
            created_at=at(6),
            updated_at=at(7),
            cwd="/home/demo/src/billing",
            source="exec",
            turns=(
                turn(301, at(6), "Summarise the failing CI jobs from last night.",
                     "Two jobs failed: `lint` (line too long in report.py) and `e2e` (timeout)."),
                turn(302, at(6.5), "Open an issue for the e2e timeout.", None),
            ),
        ),
        FixtureThread(
            id=uuid7_like(4, at(24)),
            created_at=at(24),
            updated_at=at(25),
            cwd="/home/demo/src/cli",
            model_provider="azure",
            name="Add --json to the export command",
            turns=(
                turn(401, at(24), "Add a --json flag to `export` that prints one record per line.",
                     "Added `--json`; records are written with `json.dumps` and a newline each."),
                turn(402, at(24.5), "Also document it in the README.",
                     "README now has an `export --json` example."),
                turn(403, at(24.8), "Thanks!", "You're welcome."),
            ),
        ),
        FixtureThread(
            id=uuid7_like(5, at(-48)),
            created_at=at(-48),
            updated_at=at(-47),
            cwd="/home/demo/src/website",
            archived=True,
            name="Old: migrate to the new router",
            turns=(
                turn(501, at(-48), "Plan the migration to the new router.",
                     "Three steps: wrap routes, move loaders, delete the old config."),
            ),
        ),
        FixtureThread(
            id=uuid7_like(6, at(-72)),
            created_at=at(-72),
            updated_at=at(-71),
            cwd="/home/demo/src/billing",
            archived=True,
            turns=(
                turn(601, at(-72), "Draft a release note for 2.3.", "2.3 brings exact invoice totals."),
            ),
        ),
    ]

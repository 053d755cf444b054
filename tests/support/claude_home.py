"""Fixture Claude configuration directories: hand-written sessions the real SDK reads.

The format is the one the research notes verified (Claude Code 2.1.332, SDK 0.2.189): a
session is `<configDir>/projects/<project key of realpath(cwd)>/<session uuid>.jsonl`,
one compact JSON object per line with `type` first; user and assistant lines carry
`uuid`, `parentUuid` (null at the root), `timestamp`, `sessionId`, `cwd`, `gitBranch` and
`message`; titles are `custom-title` / `ai-title` lines. The SDK takes `last_modified`
(and the listing order) from the file's mtime, so it is set with `os.utime`. The project
key comes from the SDK's own `project_key_for_directory`, never from code of ours.

`make_claude_world` builds the world the driver and CLI tests share: a real Git
repository `app` with a worktree `app-feature` and a subdirectory `app/pkg` that has a
session of its own, a sibling plain directory `app-old` (whose key starts like `app`'s),
and two unrelated projects, `notes` and `scratch`.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from claude_agent_sdk import project_key_for_directory

from tests.support.git_repos import GitRepos

CLI_VERSION = "2.1.332"
BASE = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class FixtureTurn:
    user: str | list[dict[str, Any]]
    assistant: list[dict[str, Any]] | str | None = None


@dataclass(frozen=True)
class FixtureSession:
    id: str
    cwd: str
    turns: tuple[FixtureTurn, ...]
    created_at: datetime
    updated_at: datetime
    branch: str | None = "main"
    title: str | None = None  # a `custom-title` line (the user's)
    ai_title: str | None = None  # an `ai-title` line (Claude's)
    tag: str | None = None
    # Raw bytes put inside the first user message's text (to make a file the SDK
    # cannot decode); None for a normal file.
    poison: bytes | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def message_ids(self) -> list[str]:
        """The uuids of the user/assistant lines, in file order."""
        ids = []
        for index, turn in enumerate(self.turns):
            ids.append(line_uuid(self.id, index, "user"))
            if turn.assistant is not None:
                ids.append(line_uuid(self.id, index, "assistant"))
        return ids


def session_id(seed: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentctl-claude-fixture-{seed}"))


def line_uuid(session: str, index: int, role: str) -> str:
    return str(uuid.uuid5(uuid.UUID(session), f"{index}-{role}"))


def stamp(when: datetime) -> str:
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _lines(session: FixtureSession) -> list[dict[str, Any]]:
    common: dict[str, Any] = {"sessionId": session.id, "cwd": session.cwd, "version": CLI_VERSION}
    if session.branch is not None:
        common["gitBranch"] = session.branch
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    clock = session.created_at
    for index, turn in enumerate(session.turns):
        user_id = line_uuid(session.id, index, "user")
        lines.append({"type": "user", "uuid": user_id, "parentUuid": parent, "isSidechain": False,
                      "timestamp": stamp(clock), "userType": "external", **common,
                      "message": {"role": "user", "content": turn.user}})
        parent = user_id
        clock += timedelta(seconds=1)
        if turn.assistant is not None:
            assistant_id = line_uuid(session.id, index, "assistant")
            content = turn.assistant if isinstance(turn.assistant, list) else [{"type": "text", "text": turn.assistant}]
            lines.append({"type": "assistant", "uuid": assistant_id, "parentUuid": parent, "isSidechain": False,
                          "timestamp": stamp(clock), "userType": "external", **common,
                          "message": {"id": f"msg_{assistant_id[:8]}", "type": "message", "role": "assistant",
                                      "model": "claude-opus-5-5", "content": content, "stop_reason": "end_turn"}})
            parent = assistant_id
            clock += timedelta(seconds=1)
    if session.ai_title is not None:
        lines.append({"type": "ai-title", "aiTitle": session.ai_title, "sessionId": session.id})
    if session.title is not None:
        lines.append({"type": "custom-title", "customTitle": session.title, "sessionId": session.id})
    if session.tag is not None:
        lines.append({"type": "tag", "tag": session.tag, "sessionId": session.id})
    return lines


def session_path(config_dir: Path, session: FixtureSession) -> Path:
    return config_dir / "projects" / project_key_for_directory(session.cwd) / f"{session.id}.jsonl"


def write_session(config_dir: Path, session: FixtureSession) -> Path:
    path = session_path(config_dir, session)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in _lines(session)).encode()
    if session.poison is not None:
        marker = b'"content":"'
        at = data.index(marker) + len(marker)
        data = data[:at] + session.poison + data[at:]
    path.write_bytes(data)
    os.utime(path, (session.updated_at.timestamp(), session.updated_at.timestamp()))
    return path


def make_config_dir(path: Path, sessions: list[FixtureSession]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "projects").mkdir(exist_ok=True)
    for session in sessions:
        write_session(path, session)
    return path


@dataclass
class ClaudeWorld:
    root: Path
    config_dir: Path
    app: Path  # a Git repository (branch main)
    feature: Path  # its worktree (branch feature)
    pkg: Path  # a subdirectory of app
    app_old: Path  # a plain sibling directory
    notes: Path
    scratch: Path
    sessions: list[FixtureSession]
    unreadable: FixtureSession | None

    def by_name(self) -> dict[str, FixtureSession]:
        return {name: s for name, s in zip(SESSION_NAMES, self.sessions, strict=True)}

    def ids_in(self, *directories: Path) -> set[str]:
        wanted = {str(d) for d in directories}
        every = [*self.sessions, *([self.unreadable] if self.unreadable else [])]
        return {s.id for s in every if s.cwd in wanted}

    def every_id(self) -> set[str]:
        return self.ids_in(self.app, self.feature, self.pkg, self.app_old, self.notes, self.scratch)


SESSION_NAMES = ("app-titled", "app-ai-titled", "feature", "pkg", "app-old", "notes-tools", "notes-long", "scratch-bare")
LONG_TEXT = "Please look at this trace:\n" + "0123456789" * 100


def make_claude_world(root: Path, *, unreadable: bool = True) -> ClaudeWorld:
    """The shared fixture world (see the module docstring) below `root`."""
    root = Path(os.path.realpath(root))
    repos = GitRepos(root / "repos")
    app = repos.init("app")
    feature = repos.root / "app-feature"
    repos.git(app, "worktree", "add", "--quiet", "-b", "feature", str(feature))
    pkg = app / "pkg"
    pkg.mkdir()
    app_old = repos.root / "app-old"
    app_old.mkdir()
    notes = root / "notes"
    notes.mkdir()
    scratch = root / "scratch"
    scratch.mkdir()

    def at(hours: float) -> datetime:
        return BASE + timedelta(hours=hours)

    def session(name: str, cwd: Path, hours: float, turns: tuple[FixtureTurn, ...], **kw: Any) -> FixtureSession:
        return FixtureSession(id=session_id(name), cwd=str(cwd), turns=turns, created_at=at(hours),
                              updated_at=at(hours + 0.5), **kw)

    sessions = [
        session("app-titled", app, 0, (
            FixtureTurn("Why do the invoice totals drift by a cent?", "They are summed as floats; use Decimal."),
            FixtureTurn("Make the change.", "Done: `Invoice.total` uses Decimal now."),
        ), title="Invoice rounding", tag="billing"),
        session("app-ai-titled", app, 1, (
            FixtureTurn("List the slow tests.", "`test_export` takes 12 s."),
        ), ai_title="Slow test survey"),
        session("feature", feature, 2, (
            FixtureTurn("Add the CSV export behind a flag.", "Added `--csv`; it is off by default."),
        ), branch="feature"),
        session("pkg", pkg, 3, (FixtureTurn("Bump the package version.", "Bumped to 1.4.0."),)),
        session("app-old", app_old, 4, (FixtureTurn("What was in the old app?", "A Flask prototype."),),
                branch="HEAD"),
        session("notes-tools", notes, 5, (
            FixtureTurn("Count the notes.", [
                {"type": "text", "text": "Counting them."},
                {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "ls | wc -l"}},
            ]),
            FixtureTurn([{"type": "tool_result", "tool_use_id": "toolu_01", "content": "42"}],
                        "There are 42 notes."),
        ), branch=None),
        session("notes-long", notes, 6, (FixtureTurn(LONG_TEXT, LONG_TEXT),), branch=None),
        session("scratch-bare", scratch, 7, (FixtureTurn("hello"),), branch=None),
    ]
    bad = None
    if unreadable:
        # Valid JSON lines around bytes that are not UTF-8: the SDK lists the session (it
        # reads heads and tails leniently) but its full read cannot decode the file.
        bad = session("notes-unreadable", notes, 8, (FixtureTurn("broken file", "indeed"),),
                      branch=None, poison=b"\xff\xfe")
    config_dir = make_config_dir(root / "claude-config", [*sessions, *([bad] if bad else [])])
    return ClaudeWorld(root=root, config_dir=config_dir, app=app, feature=feature, pkg=pkg, app_old=app_old,
                       notes=notes, scratch=scratch, sessions=sessions, unreadable=bad)


def many_sessions(cwd: Path, count: int) -> list[FixtureSession]:
    """`count` one-turn sessions in `cwd`, each a minute newer than the one before."""
    return [
        FixtureSession(id=session_id(f"bulk-{cwd}-{n}"), cwd=str(cwd), turns=(FixtureTurn(f"bulk prompt {n}", "ok"),),
                       created_at=BASE + timedelta(minutes=n), updated_at=BASE + timedelta(minutes=n), branch=None)
        for n in range(count)
    ]

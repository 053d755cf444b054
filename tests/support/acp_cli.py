"""`agentctl` over ACP sources as real processes: a configuration of test-agent sources,
a real SQLite store, the published index; and the agent's session files, which tests
edit to change what the agent lists and what its later answers carry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lib.fabric.identity import load_or_create_identity
from lib.fabric.session_reader import SessionReader
from lib.fabric.store import open_store
from tests.support.acp_agents import agent_argv
from tests.support.cli import agentctl_env, run

GUARD_SECONDS = 120  # a guard against a hang, never the measure of a test


def toml_list(argv: list[str]) -> str:
    return "[" + ", ".join(f'"{a}"' for a in argv) + "]"


class World:
    """Sources `(id, agent arguments)`, each agent keeping its sessions in `<id>-home`."""

    def __init__(self, root: Path, *sources: tuple[str, list[str]]) -> None:
        self.root = root
        self.config = root / "config.toml"
        self.state = root / "state"
        text = ""
        for source_id, args in sources:
            home = self.home(source_id)
            home.mkdir()
            text += (f'[sources.{source_id}]\ndriver = "acp"\ncwd = "{root}"\n'
                     f"command = {toml_list(agent_argv(home, *args))}\n")
        self.config.write_text(text)
        self.store_url = f"sqlite:///{root / 'fabric.sqlite3'}"
        self.env = agentctl_env(self.state, self.config, AGENTCTL_STORE=self.store_url)

    def home(self, source_id: str) -> Path:
        return self.root / f"{source_id}-home"

    def run(self, *args: str, timeout: float = GUARD_SECONDS):
        return run(list(args), self.env, timeout=timeout)

    def index(self):
        identity = load_or_create_identity(self.state / "identity.json")
        return SessionReader(open_store(self.store_url), identity.did, identity.did).index("all")

    def capabilities(self) -> dict[str, Any]:
        [source] = self.index().sources
        return source["capabilities"]

    def loads(self, source_id: str) -> list[str]:
        """Every `session/load` the agent answered so far ("begin ID", "end ID")."""
        path = self.home(source_id) / "loads.log"
        return path.read_text().splitlines() if path.exists() else []


class AgentSessions:
    """The test agent's session files under its home (tests/support/acp_test_sessions.py)."""

    def __init__(self, home: Path) -> None:
        self.directory = home / "sessions"

    def seed(self, count: int) -> None:
        """The sessions `--seed COUNT` makes, made now, so a test can edit them first."""
        from tests.support.acp_test_sessions import Store, seed_sessions

        seed_sessions(Store(self.directory.parent), count)

    def path(self, session_id: str) -> Path:
        return self.directory / f"{session_id}.json"

    def edit(self, session_id: str, *, touch: bool = False, **fields: Any) -> None:
        """Set fields of a session (`modes`, `optionIds`, ...); `touch` moves its
        `updatedAt` on, so the next sync reads it again."""
        record = json.loads(self.path(session_id).read_text())
        record.update(fields)
        if touch:
            record["updatedAt"] = "2030-01-01T00:00:00.000Z"
        self.path(session_id).write_text(json.dumps(record))

    def remove(self, session_id: str) -> None:
        self.path(session_id).unlink()

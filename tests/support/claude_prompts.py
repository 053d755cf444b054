"""What real Claude prompts in tests need: the environment that points the bundled Claude
Code CLI at the fake Messages API on 127.0.0.1, and a look at the CLI children it runs.

The environment is the one the research notes verified (§5): a fake key, the fake
server's URL, a private HOME, and no traffic but the model requests. It goes into a
source's `env`, which the driver gives each conversation (never our own environment).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lib.drivers.claude_agent_sdk import ClaudeAgentSdkDriver
from lib.types import AgentSourceConfig
from tests.support.claude_home import (
    FixtureSession,
    FixtureTurn,
    make_config_dir,
    session_id,
    write_session,
)
from tests.support.fake_anthropic_server import FakeAnthropicServer

WHEN = datetime(2026, 4, 1, 12, 0, tzinfo=UTC)


def claude_env(base_url: str, home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-tests",
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        # An API error fails at once instead of being retried with backoff.
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


@dataclass(frozen=True)
class Child:
    pid: int
    argv: list[str]
    environ: dict[str, str]


def claude_children(parent: int | None = None) -> list[Child]:
    """The Claude Code CLI processes whose parent is `parent` (default: this process)."""
    parent = os.getpid() if parent is None else parent
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            ppid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
            if ppid != parent:
                continue
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except (OSError, StopIteration, ValueError):
            continue
        args = [a.decode("utf-8", "replace") for a in argv if a]
        if not args or not os.path.basename(args[0]).startswith("claude"):
            continue
        env = dict(e.decode("utf-8", "replace").split("=", 1) for e in environ if b"=" in e)
        found.append(Child(int(entry), args, env))
    return found


def option(argv: list[str], flag: str) -> str | None:
    """The value of `--flag value` or `--flag=value` in argv."""
    for index, arg in enumerate(argv):
        if arg == flag and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


@dataclass
class PromptWorld:
    """A fake Messages API, an empty Claude configuration directory, and two working
    directories (`work`, the sources' default, and `other`) for real prompts."""

    server: FakeAnthropicServer
    root: Path
    config_dir: Path
    work: Path
    other: Path
    env: dict[str, str]

    def config(self, **fields) -> AgentSourceConfig:
        fields.setdefault("cwd", str(self.work))
        fields.setdefault("id", "claude")
        fields.setdefault("config_dir", str(self.config_dir))
        return AgentSourceConfig(driver="claude-agent-sdk", env=self.env, **fields)

    def session(self, name: str, *, cwd: Path | None = None, poison: bytes | None = None) -> str:
        """A new fixture session (one turn) in `cwd` (default: the work directory)."""
        fixture = FixtureSession(id=session_id(f"prompt-{name}"), cwd=str(cwd or self.work),
                                 turns=(FixtureTurn(f"Earlier question of {name}", "Earlier answer."),),
                                 created_at=WHEN, updated_at=WHEN, branch=None, poison=poison)
        write_session(self.config_dir, fixture)
        return fixture.id

    def driver(self, **fields) -> ClaudeAgentSdkDriver:
        driver = ClaudeAgentSdkDriver(self.config(**fields))
        driver.start()
        return driver


@contextmanager
def prompt_world(root: Path) -> Iterator[PromptWorld]:
    work, other = root / "work", root / "other"
    work.mkdir()
    other.mkdir()
    config_dir = make_config_dir(root / "claude-config", [])
    with FakeAnthropicServer() as server:
        yield PromptWorld(server, root, config_dir, work, other, claude_env(server.url, root / "home"))

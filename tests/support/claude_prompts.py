"""What real Claude prompts in tests need: the environment that points the bundled Claude
Code CLI at the fake Messages API on 127.0.0.1, and a look at the CLI children it runs.

The environment is the one the research notes verified (§5): a fake key, the fake
server's URL, a private HOME, and no traffic but the model requests. It goes into a
source's `env`, which the driver gives each conversation (never our own environment).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


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

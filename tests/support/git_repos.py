"""Real git repositories in a temporary directory, isolated from the user's git config.

Both the fixture's own git calls and the runner it hands to the resolver use one
environment: no system or global config (so no `insteadOf` rewrites or hooks leak in),
a fixed identity, and a ceiling so discovery never climbs out of the temporary tree.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from lib.git_context import GitResult, GitRunner, SubprocessGitRunner


def isolated_git_env(home: Path, ceiling: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="Test Author",
        GIT_AUTHOR_EMAIL="author@example.invalid",
        GIT_COMMITTER_NAME="Test Author",
        GIT_COMMITTER_EMAIL="author@example.invalid",
        GIT_CEILING_DIRECTORIES=str(ceiling),
    )
    return env


class GitRepos:
    """Creates and changes repositories below `root` with the real git binary."""

    def __init__(self, root: Path) -> None:
        self.root = root
        home = root / "home"
        home.mkdir(parents=True, exist_ok=True)
        self.env = isolated_git_env(home, root)

    def git(self, cwd: Path, *args: str) -> str:
        completed = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=True,
        )
        return completed.stdout.strip()

    def init(self, name: str, *, branch: str = "main", commit: bool = True) -> Path:
        path = self.root / name
        path.mkdir(parents=True)
        self.git(path, "init", "--quiet", "--initial-branch", branch)
        if commit:
            self.commit(path, "initial")
        return path

    def commit(self, repo: Path, message: str) -> str:
        self.git(repo, "commit", "--quiet", "--allow-empty", "-m", message)
        return self.head(repo)

    def head(self, repo: Path) -> str:
        return self.git(repo, "rev-parse", "HEAD")

    def runner(self, **kwargs: object) -> SubprocessGitRunner:
        return SubprocessGitRunner(env=self.env, **kwargs)  # type: ignore[arg-type]


@dataclass
class RecordingRunner:
    """Wraps a real runner and records every argument list it was asked to run."""

    inner: GitRunner
    calls: list[list[str]] = field(default_factory=list)

    def __call__(self, args: list[str]) -> GitResult:
        self.calls.append(list(args))
        return self.inner(args)

    def commands(self) -> list[tuple[str, ...]]:
        """The calls without their `-C <dir>` prefix."""
        return [tuple(call[2:]) for call in self.calls]

"""Run `agentctl` as a real process, alone, on a pseudo-terminal, or as a real pipeline of processes."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

AGENTCTL = str(Path(sys.executable).parent / "agentctl")
REPO = Path(__file__).resolve().parents[2]
CODEX_BIN = REPO / "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def records(self) -> list[dict[str, Any]]:
        # "\n" only: str.splitlines would break at a U+0085 or U+2028 inside a string
        return [json.loads(line) for line in self.stdout.split("\n") if line.strip()]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["record"] == kind]


def agentctl_env(state_dir: Path, config: Path | None = None, **extra: str) -> dict[str, str]:
    # CLAUDE_CONFIG_DIR too: a built-in Claude source would read the developer's own sessions.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCTL_") and k != "CLAUDE_CONFIG_DIR"}
    env["AGENTCTL_STATE_DIR"] = str(state_dir)
    if config is None:
        # An explicit path that does not exist is an error by design: give an empty file.
        config = state_dir.parent / "empty-config.toml"
        config.write_text("")
    env["AGENTCTL_CONFIG"] = str(config)
    env.update(extra)
    return env


def run(
    args: list[str], env: dict[str, str], input: str | None = None, timeout: float = 300,
    cwd: str | os.PathLike[str] | None = None,
) -> Run:
    done = subprocess.run(
        [AGENTCTL, *args], input=input, env=env, capture_output=True, text=True, timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL, cwd=cwd,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def pipeline(stages: list[list[str]], env: dict[str, str], input: str | None = None, timeout: float = 300) -> list[Run]:
    """Run `agentctl A | agentctl B | ...` with real pipes; returns one Run per stage
    (stdout is captured for the last stage only)."""
    procs: list[subprocess.Popen] = []
    previous = None
    for index, args in enumerate(stages):
        first = index == 0
        proc = subprocess.Popen(
            [AGENTCTL, *args], env=env, text=True,
            stdin=(subprocess.PIPE if input is not None else subprocess.DEVNULL) if first else previous.stdout,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        if previous is not None:
            previous.stdout.close()  # the next stage owns it now: SIGPIPE reaches the writer
        procs.append(proc)
        previous = proc
    if input is not None:
        procs[0].stdin.write(input)
        procs[0].stdin.close()
        procs[0].stdin = None  # communicate() must not flush it again
    last_out, last_err = procs[-1].communicate(timeout=timeout)
    runs = []
    for proc in procs[:-1]:
        proc.wait(timeout=timeout)
        runs.append(Run(proc.returncode, "", proc.stderr.read()))
        proc.stderr.close()
    runs.append(Run(procs[-1].returncode, last_out, last_err))
    return runs


def write_codex_config(path: Path, codex_home: Path, source_id: str = "codex") -> Path:
    path.write_text(
        f'[sources.{source_id}]\ndriver = "codex-app-server"\n'
        f'codexHome = "{codex_home}"\ncodexBin = "{CODEX_BIN}"\n'
    )
    return path


def run_on_terminal(args: list[str], env: dict[str, str], columns: int = 80, timeout: float = 300) -> Run:
    """Run `agentctl` with stdout and stderr on a pseudo-terminal of `columns` columns
    (stdin is /dev/null); what the terminal showed comes back as `stdout`, newlines
    as `\\n` (the terminal's `\\r\\n` undone)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}  # the terminal's size decides
    try:
        proc = subprocess.Popen([AGENTCTL, *args], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env)
        os.close(follower)
        follower = -1
        chunks: list[bytes] = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                proc.kill()
                raise TimeoutError(f"agentctl {' '.join(args)} did not finish in {timeout} s")
            ready, _, _ = select.select([leader], [], [], left)
            if not ready:
                continue
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: every copy of the follower is closed, the process is gone
                break
            if not data:
                break
            chunks.append(data)
        returncode = proc.wait(timeout=timeout)
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    shown = b"".join(chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")
    return Run(returncode, shown, "")

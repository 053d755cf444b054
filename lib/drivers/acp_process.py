"""An ACP agent's process: started with the source's command, `cwd` and environment,
its stderr drained and copied, and ended with whatever it started.

Environment: the agent gets what the ACP SDK passes every agent it spawns (HOME, LOGNAME,
PATH, SHELL, TERM and USER from this process, `acp.transports.default_environment`) and
the source's `env` on top; nothing else of agentctl's environment reaches it.

stderr is read to its end as it arrives, so an agent that writes a lot there never blocks
on a full pipe. Each line is copied to the `agentctl.provider` log with the prefix
`acp (source ID):` (the command line shows it with `-v`: it can hold anything, a key or
transcript text, so it is never printed unasked and never stored), and the last lines
are kept as the `detail` of the error that ends the agent.

The agent leads a process group of its own; `end()` closes its stdin, waits a moment,
then terminates and kills the group.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
from collections.abc import Mapping, Sequence

from lib.drivers.child_channels import PROVIDER_LOG, STDERR_TAIL_LINES, clean_line, provider_output

GRACE_SECONDS = 2.0  # each step of an orderly end waits this long for the agent to exit
STDERR_READ = 65536


def agent_environment(source_env: Mapping[str, str]) -> dict[str, str]:
    """What the ACP SDK gives every agent, plus the source's `env`."""
    from acp.transports import default_environment

    env = default_environment()
    env.update(source_env)
    return env


class AgentProcess:
    def __init__(self, name: str) -> None:
        self.name = name  # "acp (source ID)": the prefix of every copied stderr line
        self.process: asyncio.subprocess.Process | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_task: asyncio.Task[None] | None = None

    async def spawn(self, argv: Sequence[str], env: Mapping[str, str], cwd: str | None,
                    line_limit: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Start the agent; its stdout (lines up to `line_limit` bytes) and stdin.
        FileNotFoundError / PermissionError when the program cannot run."""
        self.process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            limit=line_limit,
            process_group=0,
        )
        self._stderr_task = asyncio.create_task(self._copy_stderr(), name=f"{self.name} stderr")
        assert self.process.stdout is not None and self.process.stdin is not None
        return self.process.stdout, self.process.stdin

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def detail(self) -> str | None:
        """The agent's last stderr lines (never a message, a record or the store)."""
        return provider_output(list(self._tail))

    async def _copy_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        stream = self.process.stderr
        partial = b""
        while True:
            chunk = await stream.read(STDERR_READ)
            if not chunk:
                break
            lines = (partial + chunk).split(b"\n")
            partial = lines.pop()[-1000:]
            for line in lines:
                self._copy(line)
        if partial:
            self._copy(partial)

    def _copy(self, raw: bytes) -> None:
        line = clean_line(raw)
        self._tail.append(line)
        PROVIDER_LOG.info("%s: %s", self.name, line)

    async def exited(self) -> int:
        """Wait for the agent to exit on its own; its exit code."""
        assert self.process is not None
        code = await self.process.wait()
        if self._stderr_task is not None:
            await asyncio.wait({self._stderr_task}, timeout=GRACE_SECONDS)  # the last lines
        return code

    async def end(self) -> int | None:
        """stdin closed, then SIGTERM, then SIGKILL to the group, each given a moment;
        the exit code (None when it was never started)."""
        process = self.process
        if process is None:
            return None
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()
        for step in (None, signal.SIGTERM, signal.SIGKILL):
            if step is not None and process.returncode is None:
                try:
                    os.killpg(process.pid, step)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                await asyncio.wait_for(asyncio.shield(process.wait()), GRACE_SECONDS)
                break
            except TimeoutError:
                continue
        if self._stderr_task is not None:
            done, _ = await asyncio.wait({self._stderr_task}, timeout=GRACE_SECONDS)
            if not done:
                self._stderr_task.cancel()
        return process.returncode

"""The provider's process: started in a process group of its own, and ended with whatever
it started.

The child leads a new process group. A signal meant for agentctl (a terminal's Ctrl-C, a
SIGTERM to its process group) therefore reaches agentctl, which ends the child in order:
stdin closed (Codex exits within milliseconds), then SIGTERM, then SIGKILL. Once the child
has exited, whatever it started that is still in its group (tools, MCP servers, a fake's
grandchild) is killed with it, so a stopped provider leaves no process behind. The group is
signalled only while the child is not reaped yet, when its pid still names the group: a
number that is free again is never signalled.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
from collections.abc import Mapping, Sequence

from lib.drivers.one_cpu import spawning_on_one_cpu

GRACE_SECONDS = 5.0  # how long each step of an orderly end waits for the child to exit
# The child's stdout pipe holds this much (Linux's default is 64 KiB, its unprivileged most
# 1 MiB): a 13 MB answer then crosses in 13 reads, not 200, each of which needs the GIL back
# from a busy main thread (session 24, a large session read early).
STDOUT_PIPE_BYTES = 1 << 20


def spawn(argv: Sequence[str], env: Mapping[str, str] | None, cwd: str | None, *,
          one_cpu: bool = False) -> subprocess.Popen[bytes]:
    """The child, with pipes for stdin, stdout and stderr, leading a process group of its
    own; with `one_cpu`, confined to one CPU (one_cpu.py: a provider that only collects)."""
    with spawning_on_one_cpu(one_cpu):
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            process_group=0,
        )
    assert process.stdout is not None
    widen_pipe(process.stdout.fileno())
    return process


def widen_pipe(fd: int) -> None:
    """Let the pipe `fd` hold STDOUT_PIPE_BYTES; where it cannot (not Linux, over the
    user's pipe quota) it keeps its size."""
    setting = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setting is None:
        return
    try:
        fcntl.fcntl(fd, setting, STDOUT_PIPE_BYTES)
    except OSError:
        pass


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child and everything in its process group (nothing once it is reaped)."""
    if process.returncode is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def end(process: subprocess.Popen[bytes], *, hung: bool) -> None:
    """End a child whose stdin was just closed, and reap it: wait for it to exit, then
    terminate it, then kill it (a `hung` child, one not reading its input, is killed at
    once); what it left in its group is killed before it is reaped."""
    steps = (signal.SIGKILL,) if hung else (None, signal.SIGTERM, signal.SIGKILL)
    for step in steps:
        if step is not None and process.returncode is None:
            try:
                process.send_signal(step)
            except OSError:
                pass
        if exits_within(process, GRACE_SECONDS):
            break
    kill_group(process)
    try:
        process.wait(timeout=GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass


def exits_within(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether the child exits within `seconds`, leaving it unreaped (its pid still names
    its group); where pidfds are missing, it is reaped instead."""
    if process.returncode is not None:
        return True
    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:  # no pidfd here, or already reaped by another thread
        try:
            process.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(int(seconds * 1000)))
    finally:
        os.close(pidfd)

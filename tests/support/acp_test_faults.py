"""The ACP test agent's scripted faults, for the driver's fault tests: each flag names
wire methods (a comma list) and says what the agent does when one is called.

  --exit-on METHODS     exit with code 3 (a line on stderr first)
  --hang-on METHODS     never answer
  --garbage-on METHODS  write a line that is no JSON to stdout instead of answering
  --fail METHODS        answer with a JSON-RPC internal error
  --stderr-flood BYTES  write that much to stderr before answering initialize
  --load-barrier N      every session/load waits until N loads are in flight at once
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from acp import RequestError


def methods(text: str | None) -> set[str]:
    return {m.strip() for m in (text or "").split(",") if m.strip()}


class Faults:
    """What the options ask the agent to do wrong, method by method."""

    def __init__(self, opts: argparse.Namespace) -> None:
        self.fail = methods(opts.fail)
        self.exit_on = methods(opts.exit_on)
        self.hang_on = methods(opts.hang_on)
        self.garbage_on = methods(opts.garbage_on)
        self.stderr_flood = opts.stderr_flood

    async def before(self, method: str) -> None:
        """Called first by every wire method the agent answers."""
        if method in self.exit_on:
            sys.stderr.write(f"acp-test-agent: exiting on {method} as asked\n")
            sys.stderr.flush()
            os._exit(3)
        if method in self.garbage_on:
            os.write(1, b"this is no JSON-RPC message {\n")
            await asyncio.Event().wait()  # the garbage was the only answer
        if method in self.hang_on:
            await asyncio.Event().wait()  # never answers
        if method in self.fail:
            raise RequestError.internal_error({"details": f"injected failure for {method}"})

    def flood_stderr(self) -> None:
        if self.stderr_flood:
            line = b"acp-test-agent: flooding stderr " + b"x" * 990 + b"\n"
            for _ in range(self.stderr_flood // len(line) + 1):
                os.write(2, line)  # blocks when nobody drains the pipe


class LoadBarrier:
    """With --load-barrier N, a load answers only once N loads were in flight together
    (a client that serialises loads of different sessions never gets an answer)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.loads_in_flight = 0
        self.barrier_passed = False
        self.loads_changed = asyncio.Condition()

    async def enter(self) -> None:
        async with self.loads_changed:
            self.loads_in_flight += 1
            self.loads_changed.notify_all()
            if self.size:
                await self.loads_changed.wait_for(lambda: self.loads_in_flight >= self.size
                                                  or self.barrier_passed)
                self.barrier_passed = True

    async def leave(self) -> None:
        async with self.loads_changed:
            self.loads_in_flight -= 1
            self.loads_changed.notify_all()

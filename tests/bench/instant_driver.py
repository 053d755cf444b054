"""The provider the command benchmarks stand behind: it answers every prompt at once.

What those benchmarks measure is agentctl's own command path, so the provider takes no
time and its sessions do not grow: what grows is agentctl's history (ledger, receipts),
not the transcript every refresh re-reads (that cost is the sync benchmarks'). With
`log`, each prompt first appends when it started and its text to that file (one write,
so a reader never sees half a line), for a benchmark in another process to read.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from lib.types import CommandExecutionResult
from tests.support.scripted_driver import ScriptedDriver


class InstantDriver(ScriptedDriver):
    def __init__(self, log: Path | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log = log

    def prompt(self, native_session_id, input, options=None):  # noqa: ANN001, A002
        if self.log is not None:
            line = f"{time.time():.6f} {input.text}\n".encode()
            fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        if options is not None and options.on_cancellation_ready is not None:
            options.on_cancellation_ready()
        if options is not None and options.on_session_active is not None:
            options.on_session_active()
        return CommandExecutionResult(status="succeeded", provider_operation_id="turn", result={"reply": "ok"})

"""The provider the command benchmarks stand behind: it answers every prompt at once.

What those benchmarks measure is agentctl's own command path, so the provider takes no
time and its sessions do not grow: what grows is agentctl's history (ledger, receipts),
not the transcript every refresh re-reads (that cost is the sync benchmarks'). With
`log`, each prompt first appends when it started and its text to that file (one write,
so a reader never sees half a line), for a benchmark in another process to read.

A read answers as a real driver does: it parses and validates the provider's answer
(here the session's JSON text, kept from its first read) into a fresh snapshot, where
the scripted driver deep-copies a stored model (about twice the time, and not what a
driver does).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from lib.types import CommandExecutionResult, NativeSessionSnapshot
from tests.support.scripted_driver import ScriptedDriver


class InstantDriver(ScriptedDriver):
    def __init__(self, log: Path | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log = log
        self._texts: dict[str, str] = {}  # session id -> its JSON, from its first read
        self._changed: set[str] = set()  # sessions a command changed: read as the scripted driver does

    def read_session(self, native_session_id: str) -> NativeSessionSnapshot:
        with self._lock:
            stored = self.snapshots.get(native_session_id)
            text = None
            if stored is not None and native_session_id not in self._changed:
                text = self._texts.get(native_session_id)
                if text is None:
                    text = self._texts[native_session_id] = stored.model_dump_json(by_alias=True)
        if text is None or native_session_id in self.read_faults:
            return super().read_session(native_session_id)  # its faults, errors and changed sessions
        self._enter("read", native_session_id)
        snapshot = NativeSessionSnapshot.model_validate_json(text)
        with self._lock:
            if native_session_id in self._runs:
                snapshot.summary.active = True
        return snapshot

    def rename_session(self, native_session_id, title):  # noqa: ANN001, ANN201
        self._changing(native_session_id)
        return super().rename_session(native_session_id, title)

    def start_session(self, native_session_id, input, options=None):  # noqa: ANN001, ANN201, A002
        self._changing(native_session_id)
        return super().start_session(native_session_id, input, options)

    def _changing(self, native_session_id: str) -> None:
        with self._lock:
            self._changed.add(native_session_id)
            self._texts.pop(native_session_id, None)

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

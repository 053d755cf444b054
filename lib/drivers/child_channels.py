"""How the JSON-RPC transport talks to a child: message framing and stderr draining.

`LineChannel` frames one message per line (`codex app-server --listen stdio://`);
`WebSocketChannel` one message per WebSocket text frame (`codex app-server proxy`, which
relays the daemon's WebSocket over its stdio). Either refuses a message longer than its
limit with `LineTooLong` without holding more than the limit (see `child_output`). stderr is read to its end so the child never
blocks on a full pipe, and only a short tail is kept, for error messages: it is never
copied to our own output (it can hold transcript text). Both channels write through a
`ChildInput`, so no write to a child that stopped reading can hang its shutdown.
"""

from __future__ import annotations

import collections
import os
import re
from collections.abc import Sequence
from typing import Any, Protocol

from lib.drivers.child_input import ChildInput
from lib.drivers.child_output import LineReader
from lib.drivers.websocket_pipe import WebSocketPipe

STDERR_TAIL_LINES = 40
STDERR_LINE_LIMIT = 1000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Channel(Protocol):
    def open(self) -> None: ...
    def receive(self) -> bytes | None: ...
    def send(self, text: str) -> None: ...
    def close(self) -> None: ...


class LineChannel:
    """NDJSON framing: one message per line, each in one write (the writer serialises them)."""

    def __init__(self, reader: Any, writer: ChildInput, limit: int) -> None:
        self._lines, self._writer = LineReader(reader, limit), writer

    def open(self) -> None:
        pass

    def receive(self) -> bytes | None:
        while True:
            line = self._lines.readline()
            if line is None:
                return None
            if line and not line.isspace():  # blank lines are skipped (isspace copies nothing)
                return line

    def send(self, text: str) -> None:
        self._writer.write(text.encode("utf-8") + b"\n")

    def close(self) -> None:
        self._writer.close()


class WebSocketChannel:
    """One message per WebSocket text frame over the child's pipes."""

    def __init__(self, reader: Any, writer: ChildInput, limit: int) -> None:
        self._writer = writer
        # It needs only read1() of the reader, and write() and flush() of the writer.
        self._pipe = WebSocketPipe(reader, writer, max_message_bytes=limit)

    def open(self) -> None:
        self._pipe.handshake()

    def receive(self) -> bytes | None:
        return self._pipe.receive()

    def send(self, text: str) -> None:
        self._pipe.send(text)

    def close(self) -> None:
        self._pipe.close()
        self._writer.close()


def drain_stderr(stream: Any, tail: collections.deque[str]) -> None:
    """Read the child's stderr to its end, keeping only the last lines (never echoed)."""
    partial = b""
    while True:
        try:
            chunk = os.read(stream.fileno(), 65536)
        except (OSError, ValueError):
            chunk = b""
        if not chunk:
            break
        lines = (partial + chunk).split(b"\n")
        partial = lines.pop()[-STDERR_LINE_LIMIT:]
        for line in lines[-STDERR_TAIL_LINES:]:
            tail.append(clean_line(line))
    if partial:
        tail.append(clean_line(partial))


def clean_line(line: bytes) -> str:
    return _ANSI.sub("", line[:STDERR_LINE_LIMIT].decode("utf-8", "replace")).rstrip()


def reason_from_stderr(lines: Sequence[str]) -> str:
    """The program's own reason for failing: its last `Error` paragraph, else its last lines."""
    lines = [line for line in lines if line.strip()]
    starts = [i for i, line in enumerate(lines) if line.lstrip().lower().startswith("error")]
    chosen = lines[starts[-1] :] if starts else lines[-3:]
    kept = []
    for line in chosen[:6]:
        if line.strip().lower().startswith("stack backtrace"):
            break
        kept.append(line.strip())
    return " ".join(kept)

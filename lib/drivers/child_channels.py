"""How the JSON-RPC transport talks to a child: message framing and stderr draining.

`LineChannel` frames one message per line (`codex app-server --listen stdio://`);
`WebSocketChannel` one message per WebSocket text frame (`codex app-server proxy`, which
relays the daemon's WebSocket over its stdio). Either refuses a message longer than its
limit with `LineTooLong` without holding more than the limit (see `child_output`).
stderr is read to its end so the child never blocks on a full pipe, and only a short tail
is kept. That tail can hold anything (a key, transcript text), so it never goes into an
error's message, a record or the store: it is an error's `detail`, and it reaches our own
stderr only with `-v` (the `agentctl.provider` log, see `report_provider_output`). Both
channels write through a `ChildInput`, so no write to a child that stopped reading can
hang its shutdown.
"""

from __future__ import annotations

import collections
import logging
import os
import re
from collections.abc import Sequence
from typing import Any, Protocol

from lib.drivers.child_input import ChildInput
from lib.drivers.child_output import LineReader

STDERR_TAIL_LINES = 20
STDERR_LINE_LIMIT = 1000
DETAIL_BYTE_LIMIT = 4096
PROVIDER_LOG = logging.getLogger("agentctl.provider")
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
        # wsproto (and h11 under it) only for the proxy modes: `stdio` never loads them
        from lib.drivers.websocket_pipe import WebSocketPipe

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


def provider_output(lines: Sequence[str]) -> str | None:
    """A provider's own last lines as an error's `detail`: at most the last
    `STDERR_TAIL_LINES` lines and `DETAIL_BYTE_LIMIT` bytes of them; None when it wrote nothing."""
    kept = [line.rstrip() for line in lines]
    while kept and not kept[-1]:
        kept.pop()
    kept = kept[-STDERR_TAIL_LINES:]
    while kept and not kept[0]:
        kept.pop(0)
    text = "\n".join(kept).encode("utf-8")
    if not text:
        return None
    return text[-DETAIL_BYTE_LIMIT:].decode("utf-8", "ignore")


def report_provider_output(name: str, detail: str | None) -> None:
    """Offer what a failing provider wrote to a person who asked for it (`agentctl -v`);
    the library only logs it, at INFO, which nothing shows unless a handler is set up."""
    if detail:
        PROVIDER_LOG.info("%s wrote (last lines, not recorded):\n%s", name,
                          "\n".join("  " + line for line in detail.splitlines()))

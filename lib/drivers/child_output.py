"""The child's output, read within two bounds a broken provider cannot get past.

- Length: `LineReader` splits the output into lines of at most `limit` bytes. A longer
  line raises `LineTooLong` as soon as the limit is passed, having held at most the limit
  plus one read (64 KiB, or 1 MiB within a line that spans reads), never the whole line: a provider that floods a line, or never
  ends one, costs no more memory than the limit.
- Silence: `OutputMeter` notes when anything last arrived (any bytes, a whole message or
  not), and a `StallWatch` tells how long a pending call has gone without anything: the
  stall clock of collection calls. `Stalled` is raised by the wait that gave up on it.
"""

from __future__ import annotations

import collections
import time

TYPE_CHECKING = False  # typing itself is not imported on the idle fast path (codex_early_list.py reads with this)
if TYPE_CHECKING:
    from typing import Any

READ_SIZE = 65536
LONG_READ_SIZE = 1 << 20  # within a line that spans reads: a large answer in few reads (child_process widens the pipe)


class LineTooLong(Exception):
    """The child sent a line (a message) longer than the limit; nothing more is read."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"a line longer than {size_text(limit)}")
        self.limit = limit


class WebSocketError(Exception):
    """The peer broke the WebSocket protocol or refused the upgrade (lib/drivers/websocket_pipe.py
    raises it; defined here so the transport can catch it without importing wsproto, which
    only the proxy modes use)."""


class Stalled(Exception):
    """A call waited `seconds` without anything at all arriving from the child."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"nothing arrived for {seconds:g} s")
        self.seconds = seconds


def size_text(count: int) -> str:
    """`268435456 bytes (256 MiB)`: exact, and readable when it is a round size."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count} bytes ({count // size} {unit})"
    return f"{count} bytes"


class OutputMeter:
    """The child's stdout (`read1` only), noting when the last bytes arrived."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.last_arrival = time.monotonic()

    def read1(self, size: int = READ_SIZE) -> bytes:
        data = self._stream.read1(size)
        if data:
            self.last_arrival = time.monotonic()
        return data


class StallWatch:
    """How long a pending call has left before it counts as stalled: `seconds` without
    anything arriving, counted from the later of the call's start and the last arrival."""

    def __init__(self, meter: OutputMeter, seconds: float) -> None:
        self.meter = meter
        self.seconds = seconds
        self.since = time.monotonic()

    def remaining(self) -> float:
        quiet_since = max(self.since, self.meter.last_arrival)
        return self.seconds - (time.monotonic() - quiet_since)


class LineReader:
    """Lines of at most `limit` bytes (without their newline) from `stream.read1`.

    Each read is split at its newlines at once (in C), so a line costs what `readline`
    costs; a line that spans reads is kept as its pieces until its newline arrives."""

    def __init__(self, stream: Any, limit: int) -> None:
        self._stream = stream
        self.limit = limit
        self._ready: collections.deque[bytes] = collections.deque()  # whole lines, in order
        self._pieces: list[bytes] = []  # the line being read, so far
        self._held = 0  # bytes in _pieces
        self._ended = False

    @property
    def held(self) -> int:
        """Bytes of the line being read that are held now (for tests and diagnostics)."""
        return self._held

    def unread(self) -> bytes:
        """What was read and not given yet, as it arrived: whole lines, then the start of
        the next (a reader handing the stream over, lib/drivers/codex_early_list.py)."""
        return b"".join(line + b"\n" for line in self._ready) + b"".join(self._pieces)

    def readline(self) -> bytes | None:
        """The next line without its newline (the last one may have had none); None at the
        end of the output."""
        while not self._ready:
            if self._ended:
                return None
            self._read()
        return self._ready.popleft()

    def _read(self) -> None:
        chunk = self._stream.read1(LONG_READ_SIZE if self._pieces else READ_SIZE)
        if not chunk:
            self._ended = True
            if self._pieces:
                self._ready.append(self._take(b""))
            return
        lines = chunk.split(b"\n")
        rest = lines.pop()  # the start of the next line (empty after a newline)
        if lines:
            if self._pieces:
                lines[0] = self._take(lines[0])
            if len(chunk) > self.limit and max(map(len, lines)) > self.limit:
                self._give_up()
            self._ready.extend(lines)
        if rest:
            self._held += len(rest)
            if self._held > self.limit:
                self._give_up()
            self._pieces.append(rest)

    def _take(self, last: bytes) -> bytes:
        """The line being read, ended by `last`; past the limit it is refused."""
        if self._held + len(last) > self.limit:
            self._give_up()
        self._pieces.append(last)
        line = b"".join(self._pieces)
        self._pieces, self._held = [], 0
        return line

    def _give_up(self) -> None:
        self._pieces, self._held = [], 0
        self._ready.clear()
        raise LineTooLong(self.limit)

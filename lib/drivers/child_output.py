"""The child's output, read within two bounds a broken provider cannot get past.

- Length: `LineReader` splits the output into lines of at most `limit` bytes. A longer
  line raises `LineTooLong` as soon as the limit is passed, having held at most the limit
  plus one read (64 KiB), never the whole line: a provider that floods a line, or never
  ends one, costs no more memory than the limit.
- Silence: `OutputMeter` notes when anything last arrived (any bytes, a whole message or
  not), and a `StallWatch` tells how long a pending call has gone without anything: the
  stall clock of collection calls. `Stalled` is raised by the wait that gave up on it.
"""

from __future__ import annotations

import time
from typing import Any

READ_SIZE = 65536


class LineTooLong(Exception):
    """The child sent a line (a message) longer than the limit; nothing more is read."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"a line longer than {size_text(limit)}")
        self.limit = limit


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
    """Lines of at most `limit` bytes (the newline not counted) from `stream.read1`."""

    def __init__(self, stream: Any, limit: int) -> None:
        self._stream = stream
        self.limit = limit
        self._buffer = bytearray()
        self._start = 0  # where the next line begins in the buffer
        self._scanned = 0  # the buffer holds no newline between _start and here

    @property
    def held(self) -> int:
        """Bytes of the line being read that are held now (for tests and diagnostics)."""
        return len(self._buffer) - self._start

    def readline(self) -> bytes | None:
        """The next line with its newline (the last one may lack it); None at the end."""
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                if end - self._start > self.limit:
                    self._give_up()
                with memoryview(self._buffer) as view:
                    line = bytes(view[self._start : end + 1])
                self._start = self._scanned = end + 1
                return line
            if len(self._buffer) - self._start > self.limit:
                self._give_up()
            if self._start:
                # Drop the lines already handed out before waiting for more (what is left is
                # less than one read), so a large line's buffer is not kept while the child
                # is quiet.
                self._buffer = self._buffer[self._start :]
                self._start = 0
            self._scanned = len(self._buffer)
            chunk = self._stream.read1(READ_SIZE)
            if not chunk:
                rest = bytes(self._buffer)
                self._buffer, self._scanned = bytearray(), 0
                return rest or None
            self._buffer += chunk

    def _give_up(self) -> None:
        self._buffer, self._start, self._scanned = bytearray(), 0, 0
        raise LineTooLong(self.limit)

"""The child's stdout pipe is widened (session 24): a large answer crosses in few reads,
each of which needs the GIL back from a busy main thread. Real child processes."""

from __future__ import annotations

import fcntl
import sys

import pytest

from lib.drivers import child_process
from lib.drivers.child_output import LONG_READ_SIZE, LineReader, OutputMeter

pytestmark = pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")


class CountingStream:
    """The child's stdout, counting the reads made of it."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.reads = 0

    def read1(self, size: int) -> bytes:
        self.reads += 1
        return self.stream.read1(size)


def test_a_childs_stdout_pipe_holds_a_mebibyte_and_a_long_line_crosses_in_few_reads():
    line_bytes = 3 * LONG_READ_SIZE
    code = f"import sys; sys.stdout.buffer.write(b'x' * {line_bytes} + b'\\n'); sys.stdout.flush()"
    process = child_process.spawn([sys.executable, "-c", code], None, None)
    try:
        assert fcntl.fcntl(process.stdout.fileno(), fcntl.F_GETPIPE_SZ) == child_process.STDOUT_PIPE_BYTES
        counting = CountingStream(process.stdout)
        line = LineReader(OutputMeter(counting), line_bytes + 1).readline()
        assert line == b"x" * line_bytes
        assert counting.reads <= 2 * (line_bytes // LONG_READ_SIZE) + 2  # 64 KiB reads would take 48 or more
    finally:
        process.stdout.close()
        process.stdin.close()
        process.stderr.close()
        process.wait()

"""Large allocations are mapped on their own once a stage runs (lib/memory_release.py,
session 30): glibc otherwise raises its mapping threshold to each mapped block freed, and
every later large buffer of a sync came from the heap, which it left grown. Each case runs
in a fresh interpreter (the threshold is the process's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# after a freed 8 MiB block, how many bytes of a new 4 MiB buffer glibc maps on its own
# (more than the heap has free: else it comes from there, and grows nothing)
MAPPED_AFTER_A_LARGE_FREE = """
import ctypes, sys
from lib.memory_release import map_large_allocations
from lib.pipeline.runner import run_stage

class MallInfo(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo
if sys.argv[1] == "stage":
    class Stage:
        stage = "none"
        def handle(self, item): return iter(())
        def finish(self): return iter(())
        def close(self): pass
    class Sink:
        def put(self, record): pass
    run_stage(Stage(), [], Sink())
big = bytearray(8 << 20)
del big
before = libc.mallinfo2().hblkhd
buffer = bytearray(4 << 20)
print(libc.mallinfo2().hblkhd - before)
"""


def _mapped(how: str) -> int:
    done = subprocess.run([sys.executable, "-c", MAPPED_AFTER_A_LARGE_FREE, how], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    return int(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_once_a_stage_runs_a_large_buffer_is_mapped_even_after_a_larger_one_was_freed() -> None:
    assert _mapped("plain") == 0  # glibc's own rule: the freed 8 MiB raised the threshold
    assert _mapped("stage") >= 4 << 20

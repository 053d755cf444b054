"""Run one benchmark task in a fresh child process and read its peak memory.

`run_child("tests.bench.prepare_bench", "time_pipeline", path, 3)` starts
`python -m tests.bench.measure <module> <function> <json args>`; the child calls the
function, adds its own peak resident set size (ru_maxrss) to the returned dict, and prints
it as JSON on its last stdout line. A fresh process per task means one task's garbage,
caches and peak memory never leak into another task's numbers.

Children keep their bytecode (in one private cache directory for the bench's run, with
PYTHONDONTWRITEBYTECODE dropped), as an installed agentctl does: pip compiles what it
installs, while an editable checkout under PYTHONDONTWRITEBYTECODE=1 would compile every
module of the project in every child, about 150 ms of CPU per agentctl process.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

_MARK = "BENCH-RESULT "


@functools.cache
def child_environment() -> dict[str, str]:
    """This process's environment, with bytecode kept in one cache for the run."""
    cache = tempfile.mkdtemp(prefix="agentctl-bench-pycache-")  # 0700
    atexit.register(shutil.rmtree, cache, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def run_child(module: str, function: str, *args: Any) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.bench.measure", module, function, json.dumps(list(args))],
        capture_output=True,
        text=True,
        check=False,
        env=child_environment(),
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK) :])
    raise RuntimeError(f"benchmark task {module}.{function} failed:\n{proc.stderr[-4000:]}")


def peak_rss_bytes() -> int:
    # Linux reports ru_maxrss in KiB (macOS in bytes).
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def best_of(rounds: int, fn: Callable[[], float]) -> float:
    """The smallest of `rounds` timings: the least disturbed by other work on the machine."""
    return min(fn() for _ in range(rounds))


def clock() -> float:
    return time.perf_counter()


def _main(argv: list[str]) -> None:
    module, function, raw_args = argv
    task = getattr(importlib.import_module(module), function)
    result = dict(task(*json.loads(raw_args)))
    result["peakRssBytes"] = peak_rss_bytes()
    print(_MARK + json.dumps(result), flush=True)


if __name__ == "__main__":
    _main(sys.argv[1:])


def median_ms(values: list[float]) -> str:
    """The median of `values` (seconds) in milliseconds, for a table cell."""
    return f"{statistics.median(values) * 1000:.1f}"


def p95_ms(values: list[float]) -> str:
    """The 95th percentile of `values` (seconds, nearest rank below) in milliseconds."""
    ordered = sorted(values)
    return f"{ordered[int(0.95 * (len(ordered) - 1))] * 1000:.1f}"


def run_children(processes: int, module: str, function: str, *args: Any) -> list[dict[str, Any]]:
    """`run_child(module, function, *args)` in `processes` fresh processes, one after
    another (never side by side, so they do not compete for the CPU): for a figure whose
    spread is between processes, not within one, each process is one sample."""
    return [run_child(module, function, *args) for _ in range(processes)]


def median_and_range(values: list[float]) -> tuple[float, float, float]:
    """The median of `values`, and their smallest and largest: a figure and its spread."""
    return statistics.median(values), min(values), max(values)

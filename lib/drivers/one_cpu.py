"""A collecting provider started on one CPU.

Measured on the real `codex app-server` (issue 14, session 27, 3,000 threads on a 2-CPU
machine): listing or reading is a chain of hand-offs between its threads, each waking
the next, with no work running side by side. Spread over two CPUs every hand-off wakes
the other CPU and the threads migrate (11,500 migrations for one listing); on one CPU a
hand-off is a context switch. The bare `thread/list` loop took 1.22-1.50 s and 1.3-1.6 s
of CPU on two CPUs, 0.64 s and 0.62 s of CPU on one; the bare list+read loop 6.0-6.6 s
against 3.5 s.

So a provider started only to collect (nothing it runs is an agent's tool: prompts are
never confined) is started confined to one of the CPUs this process may use. Linux keeps
affinity per thread and a child inherits its parent thread's: the spawning thread is
confined for the spawn and restored after, so neither this process nor its other
threads are ever confined. Where affinity cannot be set (not Linux) the child starts as
before. The CPU is picked by this process's id, so concurrent syncs spread over the CPUs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def spawning_on_one_cpu(confine: bool) -> Iterator[None]:
    """While the body runs, a child spawned by this thread starts on one CPU (when
    `confine`, and this thread may use more than one)."""
    setter, getter = getattr(os, "sched_setaffinity", None), getattr(os, "sched_getaffinity", None)
    if not confine or setter is None or getter is None:
        yield
        return
    allowed = getter(0)
    if len(allowed) < 2:
        yield
        return
    ordered = sorted(allowed)
    try:
        setter(0, {ordered[os.getpid() % len(ordered)]})
    except OSError:  # a container may forbid it: the child starts as before
        yield
        return
    try:
        yield
    finally:
        setter(0, allowed)

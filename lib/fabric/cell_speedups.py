"""lib._cells (lib/_cells.c), the C path of the per-cell work of writing session graphs,
when it is built and wanted; else None, and every caller runs its pure-Python
reference, which produces the same values and bytes (tests/fabric/test_cells_speedups.py).

AGENTCTL_PURE_PYTHON=1 in the environment turns it off for the process, as it does
lib._speedups (lib/hashing.py)."""

from __future__ import annotations

import os
from types import ModuleType

CELLS: ModuleType | None
try:
    from lib import _cells as CELLS
except ImportError:  # no compiler at install time
    CELLS = None

if os.environ.get("AGENTCTL_PURE_PYTHON", "") not in ("", "0"):
    CELLS = None


class _NeverRaised(Exception):
    """Stands for lib._cells.Unsupported when the module is off."""


Unsupported: type[Exception] = CELLS.Unsupported if CELLS is not None else _NeverRaised

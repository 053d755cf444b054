"""Plain-text tables for people on a terminal (JSON lines are for programs)."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence


def print_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    rows = [[_cell(value) for value in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], len(value))
    # The last column takes what the terminal has left.
    total = shutil.get_terminal_size((120, 20)).columns
    used = sum(widths[:-1]) + 2 * (len(widths) - 1)
    widths[-1] = max(len(headers[-1]), min(widths[-1], total - used))
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    print(line.rstrip())
    for row in rows:
        print("  ".join(v[:w].ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    if not rows:
        print("(none)")


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("\n", " ").replace("\t", " ")

"""The benchmark harness: `python -m tests.bench.run [--quick] [--scale] [--only NAME] [--strict]`.

A section is a module with `run(report)`; it measures something and adds tables and
target checks to the report. Later work (driver overhead, sync throughput) adds a module
to SECTIONS. Everything is printed at the end as plain-text tables; `--strict` exits 1
when a target is missed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass, field

SECTIONS = [
    "tests.bench.prepare_bench",
    "tests.bench.codex_bench",
    "tests.bench.claude_bench",
    "tests.bench.target_bench",
    "tests.bench.sync_bench",
    "tests.bench.postgres_bench",
    "tests.bench.command_bench",
    "tests.bench.host_bench",
    "tests.bench.sync_e2e_bench",
    "tests.bench.startup_bench",
]


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Report:
    quick: bool
    scale: bool = False  # --scale: the largest corpora too (minutes; never in `make test`)
    tables: list[Table] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def table(self, title: str, headers: list[str], rows: list[list[object]]) -> None:
        self.tables.append(Table(title, headers, [[str(cell) for cell in row] for row in rows]))

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append(Check(name, ok, detail))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def render(self) -> str:
        out: list[str] = []
        for table in self.tables:
            out.append(_render_table(table))
        if self.checks:
            rows = [[("met" if c.ok else "MISSED"), c.name, c.detail] for c in self.checks]
            out.append(_render_table(Table("Targets", ["status", "target", "measured"], rows)))
        out.extend(self.notes)
        return "\n\n".join(out)


def _render_table(table: Table) -> str:
    widths = [len(h) for h in table.headers]
    for row in table.rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.ljust(w) if i == 0 or not _numeric(cell) else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([table.title, rule, line(table.headers), rule, *(line(r) for r in table.rows), rule])


def _numeric(cell: str) -> bool:
    return bool(cell) and (cell[0].isdigit() or cell[0] in "-+.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a small corpus (seconds, not minutes)")
    parser.add_argument("--only", action="append", default=[], help="run only sections whose name contains this")
    parser.add_argument("--scale", action="store_true", help="add the largest corpora (25,000 threads)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    report = Report(quick=args.quick, scale=args.scale)
    for name in SECTIONS:
        if args.only and not any(part in name for part in args.only):
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        importlib.import_module(name).run(report)
    print(report.render())
    return 1 if args.strict and not all(c.ok for c in report.checks) else 0


if __name__ == "__main__":
    sys.exit(main())

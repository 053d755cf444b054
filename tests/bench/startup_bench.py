"""Benchmark section: start-up (issue 14, goal 6), beside its floors, in one run.

Each figure is the median wall-clock of several fresh processes of the installed console
script, timed from outside as a person or cron sees them:

- `agentctl --version`, `agentctl --help` and `agentctl sync --help`;
- `agentctl sync` with nothing to do: a small Codex home unchanged since its last complete
  sync (goal 3's idle resync: Codex is not started, nothing is published), answered by
  the idle fast path (cli/fast_sync.py), and the same with the fast path off
  (`AGENTCTL_NO_IDLE_FAST_PATH=1`, the normal path);

beside the floors, with the same interpreter: `python -c pass` (Python, site and the
editable install's finder) and `python -c "import click"`. How many modules each imports
(from the process's own `-X importtime` report) is counted too: a figure the machine's
load does not move. Targets: `--help` and `--version` at most 80 ms, the idle sync at most
150 ms (session 21). Every process runs
once untimed first and with its bytecode cached, as an installed agentctl does.

`agentctl_task` is the child task of the sync benches (sync_e2e_bench.py): it lives here
because this module imports nothing of lib, so a timed `agentctl` child pays for exactly
what agentctl imports.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_MS = 80.0
IDLE_TARGET_MS = 150.0  # session 21's goal for the idle sync of an unchanged home (issue 14, goal 3)
IDLE_CASE = "agentctl sync, nothing to do (30 threads, home unchanged)"
AGENTCTL = str(Path(sys.executable).parent / "agentctl")


# -- in a child process (sync_e2e_bench.py) -----------------------------------------------


def agentctl_task(args: list[str], env: dict[str, str], out: str) -> dict[str, Any]:
    """Run `agentctl ARGS` in this (fresh) process with `env`, its stdout to `out`."""
    os.environ.update(env)
    sys.argv = ["agentctl", *args]
    from cli.main import main

    code = 0
    with open(out, "w", encoding="utf-8") as sink, contextlib.redirect_stdout(sink):
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return {"code": code}


# -- measuring ------------------------------------------------------------------------------


def timed_runs(argv: list[str], env: dict[str, str], rounds: int) -> list[float]:
    """Wall-clock seconds of `rounds` fresh processes of `argv` (each must exit 0)."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    return times


def imported_modules(argv: list[str], env: dict[str, str]) -> tuple[int, float]:
    """(modules imported, their summed own import time in ms) of one `-X importtime` run."""
    command = argv[1:] if argv[0] == sys.executable else argv
    done = subprocess.run([sys.executable, "-X", "importtime", *command], env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    rows = [line.split("|") for line in done.stderr.splitlines()
            if line.startswith("import time:") and "imported package" not in line]
    return len(rows), sum(int(row[0].split(":")[1]) for row in rows) / 1000


class IdleHome:
    """A small Codex home synced once (the real pinned Codex), then left alone: every
    later `agentctl sync` finds it unchanged and starts nothing."""

    def __init__(self, root: Path) -> None:
        from tests.bench.rollout_corpus import RolloutCorpus
        from tests.bench.sync_e2e_bench import Home

        self.home = Home(root, RolloutCorpus(30, small_kb=20))

    def prepare(self) -> bool:
        self.home.sync()
        for _ in range(4):  # Codex may checkpoint its database as it exits: then again
            self.home.settle()
            if self.home.sync()["unchanged"]:
                return True
        return False

    def env(self) -> dict[str, str]:
        return {**os.environ, **self.home.env()}

    def still_idle(self) -> bool:
        """The last timed run did not list: its output says every source was unchanged."""
        done = subprocess.run([AGENTCTL, "sync", "--json"], env=self.env(), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, check=False)
        records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        return done.returncode == 0 and any(r.get("idle") for r in records if r.get("record") == "publication")


def run(report: Any) -> None:
    from tests.bench.codex_bench import NATIVE_CODEX

    rounds = 7 if report.quick else 15
    # Bytecode cached, as an installed agentctl has it (pip compiles on install): without
    # this, a PYTHONDONTWRITEBYTECODE=1 environment (and an editable install has no
    # __pycache__ of its own) makes every run compile agentctl's modules from source.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCTL_") and k != "PYTHONDONTWRITEBYTECODE"}
    root = Path(tempfile.mkdtemp(prefix="startupbench"))
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    try:
        env["AGENTCTL_STATE_DIR"] = str(root / "state")
        config = root / "empty.toml"
        config.write_text("")
        env["AGENTCTL_CONFIG"] = str(config)
        cases: list[tuple[str, list[str], dict[str, str]]] = [
            ("python -c pass (floor)", [sys.executable, "-c", "pass"], env),
            ('python -c "import click" (floor)', [sys.executable, "-c", "import click"], env),
            ("agentctl --version", [AGENTCTL, "--version"], env),
            ("agentctl --help", [AGENTCTL, "--help"], env),
            ("agentctl sync --help", [AGENTCTL, "sync", "--help"], env),
        ]
        idle_note, idle = "", None
        if NATIVE_CODEX.is_file():
            idle = IdleHome(root / "idle")
            if idle.prepare():
                cases.append((IDLE_CASE, [AGENTCTL, "sync"], {**env, **idle.home.env()}))
                # the same run with the fast path off (session 21): what the normal path costs
                cases.append(("agentctl sync, nothing to do, normal path (AGENTCTL_NO_IDLE_FAST_PATH=1)",
                              [AGENTCTL, "sync"], {**env, **idle.home.env(), "AGENTCTL_NO_IDLE_FAST_PATH": "1"}))
            else:
                idle_note = "the idle sync was not measured: the Codex home never settled as unchanged"
        else:
            idle_note = f"the idle sync was not measured: {NATIVE_CODEX} is missing (run make install)"
        rows, medians = [], {}
        for name, argv, case_env in cases:
            timed_runs(argv, case_env, 1)  # writes the bytecode cache: not timed
            times = timed_runs(argv, case_env, rounds)
            medians[name] = statistics.median(times) * 1000
            count, import_ms = imported_modules(argv, case_env)
            rows.append([name, f"{medians[name]:.1f}", f"{min(times) * 1000:.1f}", str(count), f"{import_ms:.1f}"])
        floor = medians["python -c pass (floor)"]
        for row, name in zip(rows, medians, strict=True):  # what agentctl adds to Python's own start-up
            row.insert(2, f"{medians[name] - floor:+.1f}")
        if idle is not None and not idle_note and not idle.still_idle():
            idle_note = "the idle sync listed after all: its figure is not an idle one"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report.table(f"Start-up: fresh processes, median of {rounds} (same interpreter; modules from -X importtime)",
                 ["process", "median ms", "over python -c pass ms", "min ms", "modules imported", "import ms (own)"], rows)
    for name in ("agentctl --version", "agentctl --help"):
        report.check(f"{name} ≤ {TARGET_MS:.0f} ms", medians[name] <= TARGET_MS,
                     f"median {medians[name]:.1f} ms; python -c pass {floor:.1f} ms, "
                     f"{medians[name] / floor:.2f}x the floor")
    report.note("Every process ran once untimed first, with its bytecode cached (PYTHONPYCACHEPREFIX in the "
                "bench's directory, PYTHONDONTWRITEBYTECODE unset), as an installed agentctl runs.")
    if IDLE_CASE in medians:
        report.check(f"idle sync of an unchanged home ≤ {IDLE_TARGET_MS:.0f} ms (the fast path)",
                     medians[IDLE_CASE] <= IDLE_TARGET_MS,
                     f"median {medians[IDLE_CASE]:.1f} ms; python -c pass {floor:.1f} ms, "
                     f"{medians[IDLE_CASE] / floor:.2f}x the floor")
    if idle_note:
        report.note(idle_note + ".")


if __name__ == "__main__":
    from tests.bench.run import Report

    report = Report(quick="--quick" in sys.argv)
    run(report)
    print(report.render())

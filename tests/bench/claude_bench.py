"""Benchmark section: the Claude driver's list and read beside the SDK's own functions.

A temporary Claude configuration directory holds N fixture sessions (three turns each)
spread over four project directories, made once for the section. The driver
(`ClaudeAgentSdkDriver`, the real pinned `claude-agent-sdk`) lists every page and reads
every session. Beside it, in the same process, a bare loop calls the SDK's own functions
with `CLAUDE_CONFIG_DIR` set once for the process, the least a program can do to get
every session's messages: one `list_sessions()` of everything, then
`get_session_messages` for each session.

Method. Within one process, rounds alternate between the two (which goes first
alternates too), and each side keeps its best round, so load from elsewhere disturbs both
alike. Each round is timed twice: wall clock and the process's CPU time. The target is
judged on CPU time: both sides are single-threaded CPU work over cached files, so on a
quiet machine the two agree, and on a loaded one CPU time leaves out the time the
scheduler gave to other programs (the process's other threads count too, so nothing the
driver did elsewhere is hidden).

The ratio of one process varies from process to process far more than from round to
round (quiet runs of one process gave 1.07 to 1.54x, while callgrind counted the same
instructions for a round in every process: it is how a process's memory happens to lay
out, not work). So the rounds run in several fresh child processes, one after another, each over
the same fixture, each alternating the same two sides over the same sessions; each
process gives one ratio (its best driver round over its best bare round), and the figure
is the median of those ratios, reported with their range. Target: that median within
1.3x the bare loop.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from lib.drivers.claude_agent_sdk import ClaudeAgentSdkDriver
from lib.types import AgentSourceConfig
from tests.bench.measure import clock, median_and_range, run_children
from tests.support.claude_home import BASE, FixtureSession, FixtureTurn, make_config_dir, session_id

RATIO_TARGET = 1.3
PROJECTS = 4
SIDES = ("bare loop", "driver")


def bench_sessions(root: Path, count: int) -> list[FixtureSession]:
    """`count` three-turn sessions a minute apart, round-robin over PROJECTS directories."""
    sessions = []
    for n in range(count):
        cwd = root / f"project-{n % PROJECTS}"
        cwd.mkdir(parents=True, exist_ok=True)
        turns = tuple(
            FixtureTurn(f"prompt {n}.{t}: " + "explain the change " * 8, "answer " * 40) for t in range(3)
        )
        when = BASE + timedelta(minutes=n)
        sessions.append(FixtureSession(id=session_id(f"bench-{n}"), cwd=str(cwd), turns=turns,
                                       created_at=when, updated_at=when, branch=None))
    return sessions


def bare_loop(sdk: Any) -> int:
    messages = 0
    for info in sdk.list_sessions():
        messages += len(sdk.get_session_messages(info.session_id))
    return messages


def driver_calls(driver: ClaudeAgentSdkDriver) -> int:
    ids: list[str] = []
    cursor = None
    while True:
        page = driver.list_sessions(cursor)
        ids += [s.native_session_id for s in page.sessions]
        cursor = page.next_cursor
        if cursor is None:
            break
    return sum(len(driver.read_session(sid).events) for sid in ids)


def alternating_rounds(config_dir: str, count: int, rounds: int) -> dict[str, Any]:
    """One process's sample (run in a fresh child): a warm-up round, then `rounds`
    rounds of both sides alternating; each side's best wall and CPU seconds."""
    import claude_agent_sdk as sdk

    previous = os.environ.get("CLAUDE_CONFIG_DIR")
    driver = ClaudeAgentSdkDriver(AgentSourceConfig(id="bench", driver="claude-agent-sdk", config_dir=config_dir))
    best = dict.fromkeys(SIDES, float("inf"))
    best_cpu = dict(best)
    sides = {"bare loop": lambda: bare_loop(sdk), "driver": lambda: driver_calls(driver)}
    try:
        driver.start()
        for round_index in range(rounds + 1):  # round 0 warms caches up
            counts = {}
            order = SIDES if round_index % 2 else SIDES[::-1]
            for name in order:
                bare = name != "driver"
                if bare:  # the bare loop sets the directory once, as a program of their own would
                    os.environ["CLAUDE_CONFIG_DIR"] = config_dir
                start, start_cpu = clock(), time.process_time()
                counts[name] = sides[name]()
                elapsed, elapsed_cpu = clock() - start, time.process_time() - start_cpu
                if bare:
                    _restore(previous)
                if round_index:
                    best[name] = min(best[name], elapsed)
                    best_cpu[name] = min(best_cpu[name], elapsed_cpu)
            assert len(set(counts.values())) == 1 and counts["driver"] == count * 6, counts
    finally:
        driver.stop()
        _restore(previous)
    return {"wall": best, "cpu": best_cpu}


def run(report) -> None:
    count, rounds, processes = (60, 2, 3) if report.quick else (300, 5, 7)
    root = Path(tempfile.mkdtemp(prefix="clbench"))
    try:
        config_dir = make_config_dir(root / "config", bench_sessions(root / "work", count))
        samples = run_children(processes, __name__, "alternating_rounds", str(config_dir), count, rounds)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    ratios = [s["cpu"]["driver"] / s["cpu"]["bare loop"] for s in samples]
    wall_ratios = [s["wall"]["driver"] / s["wall"]["bare loop"] for s in samples]
    rows = [[f"process {n}", *(f"{s[clock_][side] * 1000:.1f}" for side in SIDES for clock_ in ("wall", "cpu")),
             f"{wall_ratio:.2f}x", f"{ratio:.2f}x"]
            for n, (s, ratio, wall_ratio) in enumerate(zip(samples, ratios, wall_ratios, strict=True), 1)]
    median, low, high = median_and_range(ratios)
    wall_median, wall_low, wall_high = median_and_range(wall_ratios)
    rows.append(["median", *(f"{median_and_range([s[clock_][side] for s in samples])[0] * 1000:.1f}"
                             for side in SIDES for clock_ in ("wall", "cpu")),
                 f"{wall_median:.2f}x", f"{median:.2f}x"])
    report.table(
        f"Claude driver list + read of {count} sessions vs the SDK's functions in a bare loop "
        f"(claude-agent-sdk; {processes} fresh processes, each the best of {rounds} alternating rounds a side)",
        ["process", "bare wall ms", "bare CPU ms", "driver wall ms", "driver CPU ms", "wall ratio", "CPU ratio"],
        rows,
    )
    report.check(
        "Claude driver within 1.3x the SDK's functions in a bare loop", median < RATIO_TARGET,
        f"median {median:.2f}x (CPU time) over {processes} processes, range {low:.2f}-{high:.2f}x "
        f"(wall {wall_median:.2f}x, {wall_low:.2f}-{wall_high:.2f}x); list + read of {count} sessions")


def _restore(previous: str | None) -> None:
    if previous is None:
        os.environ.pop("CLAUDE_CONFIG_DIR", None)
    else:
        os.environ["CLAUDE_CONFIG_DIR"] = previous


if __name__ == "__main__":
    from tests.bench.run import Report

    report = Report(quick=False)
    run(report)
    print(report.render())

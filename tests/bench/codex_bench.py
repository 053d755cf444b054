"""Benchmark section: the Codex driver's overhead over the provider itself.

A temporary CODEX_HOME holds N fixture threads (legacy rollouts, three turns each). Two
real `codex app-server` processes serve it: one behind `CodexAppServerDriver`, one behind
a bare minimal JSON-RPC loop (write a line, read lines until the answer) that makes the
same calls with the same parameters: `thread/list` over every page, active then archived,
then `thread/read` with turns for every thread. Rounds alternate between the two, and each
side keeps its best round, so load from elsewhere on the machine disturbs both alike.
Target: the driver within 1.3x the bare loop.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from lib.drivers.codex_app_server import PAGE_SIZE, CodexAppServerDriver
from lib.drivers.codex_threads import SOURCE_KINDS
from lib.drivers.one_cpu import spawning_on_one_cpu
from lib.types import AgentSourceConfig
from tests.bench.measure import clock
from tests.support.codex_home import make_codex_home, many_threads

RATIO_TARGET = 1.3
ROOT = Path(__file__).resolve().parents[2]
NATIVE_CODEX = ROOT / "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"


class BareLoop:
    """The least a client can do: one line out, lines in until the answer with that id."""

    def __init__(self, codex: str, home: Path, *, one_cpu: bool = False) -> None:
        # `one_cpu`: Codex confined to one CPU, as agentctl starts a Codex that only collects
        with spawning_on_one_cpu(one_cpu):
            self.process = subprocess.Popen(
                [codex, "app-server", "--listen", "stdio://"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env={**os.environ, "CODEX_HOME": str(home)},
            )
        self.next_id = 0
        self.call("initialize", {"clientInfo": {"name": "bench", "version": "0"}})
        self._write({"method": "initialized"})

    def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self._write({"id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            message = json.loads(self.process.stdout.readline())
            if message.get("id") == self.next_id and "method" not in message:
                return message["result"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def bare_list_all(loop: BareLoop) -> list[str]:
    ids: list[str] = []
    for archived in (False, True):
        cursor = None
        while True:
            result = loop.call("thread/list", {
                "limit": PAGE_SIZE, "cursor": cursor, "archived": archived, "sortKey": "created_at",
                "sortDirection": "desc", "modelProviders": [], "sourceKinds": SOURCE_KINDS,
            })
            ids += [thread["id"] for thread in result["data"]]
            cursor = result.get("nextCursor")
            if not cursor:
                break
    return ids


def bare_read_all(loop: BareLoop, ids: list[str]) -> None:
    for thread_id in ids:
        loop.call("thread/read", {"threadId": thread_id, "includeTurns": True})


def driver_list_all(driver: CodexAppServerDriver) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = driver.list_sessions(cursor)
        ids += [s.native_session_id for s in page.sessions]
        cursor = page.next_cursor
        if cursor is None:
            return ids


def driver_read_all(driver: CodexAppServerDriver, ids: list[str]) -> None:
    for thread_id in ids:
        driver.read_session(thread_id)


def _timed(fn, *args) -> tuple[float, Any]:
    start = clock()
    value = fn(*args)
    return clock() - start, value


def run(report) -> None:
    if not NATIVE_CODEX.is_file():
        report.check("Codex driver within 1.3x a bare JSON-RPC loop", False,
                     f"not measured: {NATIVE_CODEX} is missing (run make install)")
        return
    count, rounds = (50, 3) if report.quick else (200, 5)
    root = Path(tempfile.mkdtemp(prefix="cxbench"))
    home = make_codex_home(root / "home", many_threads(count, turns=3))
    driver = CodexAppServerDriver(AgentSourceConfig(
        id="bench", driver="codex-app-server", codex_bin=str(NATIVE_CODEX), codex_home=str(home)))
    loop = None
    best = {"bare list": float("inf"), "bare read": float("inf"),
            "driver list": float("inf"), "driver read": float("inf")}
    try:
        driver.start()
        loop = BareLoop(str(NATIVE_CODEX), home)
        for round_index in range(rounds + 1):  # round 0 warms both processes up
            t, ids = _timed(bare_list_all, loop)
            if round_index:
                best["bare list"] = min(best["bare list"], t)
            t, driver_ids = _timed(driver_list_all, driver)
            if round_index:
                best["driver list"] = min(best["driver list"], t)
            assert sorted(ids) == sorted(driver_ids) and len(ids) == count
            t, _ = _timed(driver_read_all, driver, ids)
            if round_index:
                best["driver read"] = min(best["driver read"], t)
            t, _ = _timed(bare_read_all, loop, ids)
            if round_index:
                best["bare read"] = min(best["bare read"], t)
    finally:
        driver.stop()
        if loop is not None:
            loop.close()
        shutil.rmtree(root, ignore_errors=True)

    rows = []
    for operation in ("list", "read"):
        bare, ours = best[f"bare {operation}"], best[f"driver {operation}"]
        rows.append([f"{operation} {count} threads", f"{bare * 1000:.1f}", f"{ours * 1000:.1f}",
                     f"{ours / bare:.2f}"])
    bare_total = best["bare list"] + best["bare read"]
    ours_total = best["driver list"] + best["driver read"]
    ratio = ours_total / bare_total
    rows.append(["list + read", f"{bare_total * 1000:.1f}", f"{ours_total * 1000:.1f}", f"{ratio:.2f}"])
    report.table(
        f"Codex driver vs a bare JSON-RPC loop (real codex app-server, best of {rounds} rounds)",
        ["operation", "bare ms", "driver ms", "ratio"], rows,
    )
    report.check("Codex driver within 1.3x a bare JSON-RPC loop", ratio < RATIO_TARGET,
                 f"{ratio:.2f}x over list + read of {count} threads")


if __name__ == "__main__":
    from tests.bench.run import Report

    report = Report(quick=False)
    run(report)
    print(report.render())

"""Fabric target throughput: publishing N small sessions, republishing them unchanged,
and publishing one large session, into a real SQLite store (each task in a fresh child
process, so peak memory is the task's own).

Run alone: `python -m tests.bench.target_bench [--quick]`; as a section of
`python -m tests.bench.run` once listed in its SECTIONS.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.bench import corpus, store_figures
from tests.bench.measure import clock, run_child


def _target(folder: Path) -> Any:
    from lib.fabric.identity import load_or_create_identity
    from lib.fabric.store import open_store
    from lib.fabric.target import FabricTarget

    url = f"sqlite:///{folder / 'fabric.db'}"
    owner = load_or_create_identity(folder / "identity").did
    return FabricTarget.open(open_store(url), space=owner, owner=owner)


def _publish_lines(target: Any, path: str, wanted: set[int]) -> tuple[float, int, int, int]:
    """Publish the corpus lines numbered in `wanted`, streamed; (seconds, cells, sessions, bytes)."""
    from lib.prepare import prepare_session
    from lib.types import DriverCapabilities, NativeSessionSnapshot, SourceDescriptor

    source = SourceDescriptor(
        id="codex", driver="codex-app-server", capabilities=DriverCapabilities(list_sessions=True)
    )
    listed: list[str] = []
    total_bytes = 0
    start = clock()
    with target.publication() as pub:
        pub.begin_source(source, None)
        with open(path, "rb") as lines:
            last = max(wanted)
            for number, line in enumerate(lines):
                if number not in wanted:
                    continue
                total_bytes += len(line)
                snapshot = NativeSessionSnapshot.model_validate(json.loads(line)["snapshot"])
                del line
                listed.append(snapshot.summary.native_session_id)
                prepared = prepare_session("codex", snapshot, driver="codex-app-server")
                del snapshot  # the prepared copy is all publication needs
                pub.add_prepared(prepared)
                del prepared
                if number == last:
                    break  # never read past the wanted lines (a line can be 50 MB)
        pub.end_source(
            {"sourceId": "codex", "inventoryComplete": True, "complete": True, "listedSessionIds": listed}
        )
        summary = pub.commit()
    return clock() - start, summary.cells_written, len(listed), total_bytes


def _counted(target: Any, path: str, wanted: set[int]) -> dict[str, Any]:
    """One publication with its SQLite calls counted."""
    before = store_figures.calls()
    measured = _publish_lines(target, path, wanted)
    after = store_figures.calls()
    return {"measured": measured, **{k: after[k] - before[k] for k in after}}


def small_twice(path: str, count: int) -> dict[str, Any]:
    store_figures.count_sqlite_calls()
    with tempfile.TemporaryDirectory() as tmp:
        target = _target(Path(tmp))
        first = _counted(target, path, set(range(count)))
        nbytes = store_figures.store_bytes(Path(tmp) / "fabric.db")
        again = _counted(target, path, set(range(count)))
        target.store.close()
    return {"first": first, "again": again, "storeBytes": nbytes}


def large_once(path: str, line: int) -> dict[str, Any]:
    store_figures.count_sqlite_calls()
    with tempfile.TemporaryDirectory() as tmp:
        target = _target(Path(tmp))
        first = _counted(target, path, {line})
        nbytes = store_figures.store_bytes(Path(tmp) / "fabric.db")
        target.store.close()
    return {"first": first, "storeBytes": nbytes}


def _row(label: str, task: dict[str, Any], store_bytes: int | None = None) -> list[object]:
    seconds, cells, sessions, nbytes = task["measured"]
    return [
        label,
        sessions,
        f"{nbytes / 1e6:.1f}",
        f"{seconds:.2f}",
        cells,
        f"{cells / seconds:,.0f}" if seconds else "-",
        f"{nbytes / 1e6 / seconds:.1f}" if seconds else "-",
        f"{task['execute'] / sessions:.1f}",
        task["commit"],
        f"{store_bytes / nbytes:.2f}x" if store_bytes else "-",
    ]


def run(report: Any) -> None:
    profile = corpus.QUICK if report.quick else corpus.FULL
    path = str(corpus.ensure(profile))
    small = run_child("tests.bench.target_bench", "small_twice", path, profile.small_sessions)
    large = run_child("tests.bench.target_bench", "large_once", path, profile.small_sessions)
    report.table(
        f"Fabric target publication ({profile.name} corpus, SQLite)",
        ["publication", "sessions", "MB", "seconds", "cells written", "cells/s", "MB/s",
         "executes/session", "commits", "store/input"],
        [
            _row("small sessions, first", small["first"], small["storeBytes"]),
            _row("same sessions, unchanged", small["again"]),
            _row("one large session", large["first"], large["storeBytes"]),
        ],
    )
    report.check(
        "store bytes at most the input snapshot bytes (small sessions)",
        small["storeBytes"] <= small["first"]["measured"][3],
        f"{small['storeBytes'] / small['first']['measured'][3]:.2f}x "
        f"({small['storeBytes'] / 1e6:.1f} MB for {small['first']['measured'][3] / 1e6:.1f} MB)",
    )
    report.note(
        f"peak RSS: small {small['peakRssBytes'] / 2**20:.0f} MiB, "
        f"large {large['peakRssBytes'] / 2**20:.0f} MiB. executes/session counts SQLite "
        f"execute and executemany calls; store/input is the checkpointed database file "
        f"against the snapshot JSON it was published from"
    )


if __name__ == "__main__":
    from tests.bench.run import Report

    result = Report(quick="--quick" in sys.argv)
    run(result)
    print(result.render())

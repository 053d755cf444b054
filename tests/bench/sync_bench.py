"""`agentctl sync` over the generated corpus: first sync throughput, the second sync with
nothing changed as a fraction of the first, and peak memory against the largest session,
for two corpus sizes with the same largest session.

The provider is a corpus-backed driver (`CorpusDriver`): it lists the corpus's session
summaries 100 to a page and reads a session by seeking to its line, so the measured
work is `agentctl sync` itself (`cli.commands.sync.run_sync`, the same code the command
runs) and not a provider program. Each sync runs in a fresh child process, so its peak
resident memory is its own.

Run alone: `python -m tests.bench.sync_bench [--quick]`.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.bench import corpus, store_figures
from tests.bench.measure import clock, run_child

PAGE = 100
# A corpus twice the full one, with the same largest session: memory must not grow.
DOUBLE = corpus.Profile("double", 600, 20_000, 200_000, 4, 50_000_000)


def _inventory(path: str) -> Path:
    """Byte offset and summary of every corpus line, written once beside the corpus."""
    index = Path(path).with_suffix(".inventory.json")
    if index.exists() and index.stat().st_mtime >= Path(path).stat().st_mtime:
        return index
    entries = []
    with open(path, "rb") as lines:
        offset = 0
        for line in lines:
            summary = json.loads(line)["snapshot"]["summary"]
            entries.append({"offset": offset, "bytes": len(line), "summary": summary})
            offset += len(line)
    index.write_text(json.dumps(entries))
    return index


def _corpus_driver(path: str, inventory: Path) -> Any:
    from lib.drivers.base import AgentDriver, DriverError
    from lib.types import (
        AgentSourceConfig,
        DriverCapabilities,
        NativeSessionSnapshot,
        SessionPage,
        SessionSummary,
    )

    entries = json.loads(inventory.read_text())
    by_id = {e["summary"]["nativeSessionId"]: e for e in entries}

    class CorpusDriver(AgentDriver):
        """Lists and reads the corpus file: a provider with no cost of its own."""

        @classmethod

        def initial_capabilities(cls) -> DriverCapabilities:
            return DriverCapabilities(list_sessions=True, read_session=True)

        def start(self, signal: Any = None) -> None:
            self._file = open(path, "rb")  # noqa: SIM115 - closed by stop()

        def stop(self) -> None:
            self._file.close()

        def list_sessions(self, cursor: str | None = None) -> SessionPage:
            start = int(cursor or 0)
            page = entries[start : start + PAGE]
            more = start + PAGE < len(entries)
            return SessionPage(
                sessions=[SessionSummary.model_validate(e["summary"]) for e in page],
                next_cursor=str(start + PAGE) if more else None,
            )

        def read_session(self, native_session_id: str) -> NativeSessionSnapshot:
            entry = by_id.get(native_session_id)
            if entry is None:
                raise DriverError("not-found", f"no session {native_session_id}")
            self._file.seek(entry["offset"])
            line = self._file.read(entry["bytes"])
            text = line.decode("utf-8")
            del line  # json.loads(bytes) would decode a second copy while parsing
            snapshot = json.loads(text)["snapshot"]
            del text
            return NativeSessionSnapshot.model_validate(snapshot)

    return CorpusDriver(AgentSourceConfig(id="codex", driver="codex-app-server"))


def sync_twice(path: str, inventory: str, store_url: str = "") -> dict[str, Any]:
    """Two syncs into a fresh store (the state directory's SQLite file, or `store_url`,
    an empty one): the first publishes everything, the second finds nothing changed.
    Returns both times and what each published."""
    from lib.pipeline.driver_pool import DriverPool
    from lib.pipeline.records import RecordSink, data_of
    from lib.pipeline.sync import run_sync
    from lib.workspace import Workspace

    class LastRecord(RecordSink):
        def emit(self, item: Any) -> None:
            self.last = item

    store_figures.count_sqlite_calls()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.toml"
        config.write_text('[sources.codex]\ndriver = "codex-app-server"\n')
        workspace = Workspace(state_dir=tmp, config_path=str(config), store_url=store_url or None)
        results = []
        store_bytes = 0
        for _ in range(2):
            sink = LastRecord()
            calls = store_figures.calls()
            start = clock()
            with DriverPool(lambda _source: _corpus_driver(path, Path(inventory))) as drivers:
                run_sync(workspace, ["codex"], sink, drivers=drivers)
            seconds = clock() - start
            publication = data_of(sink.last)
            results.append({"seconds": seconds, "written": publication["written"],
                            "sessions": publication["sessionCount"],
                            "executes": store_figures.calls()["execute"] - calls["execute"]})
            if not store_bytes:
                store_bytes = store_figures.store_bytes(Path(tmp) / "fabric.sqlite3")
        workspace.close()
    return {"first": results[0], "second": results[1], "storeBytes": store_bytes}


def run(report: Any) -> None:
    profiles = [corpus.QUICK] if report.quick else [corpus.FULL, DOUBLE]
    rows = []
    peaks = []
    for profile in profiles:
        path = corpus.ensure(profile)
        inventory = _inventory(str(path))
        entries = json.loads(inventory.read_text())
        event_bytes = sum(e["bytes"] for e in entries)
        largest = max(e["bytes"] for e in entries)
        measured = run_child("tests.bench.sync_bench", "sync_twice", str(path), str(inventory))
        first, second = measured["first"], measured["second"]
        peak = measured["peakRssBytes"]
        peaks.append(peak)
        ratio = measured["storeBytes"] / event_bytes
        budget = 3 * largest + 100 * 2**20
        fraction = second["seconds"] / first["seconds"]
        rows.append([
            profile.name, len(entries), f"{event_bytes / 1e6:.0f}", f"{largest / 1e6:.0f}",
            f"{first['seconds']:.1f}", f"{event_bytes / 1e6 / first['seconds']:.1f}",
            f"{second['seconds']:.2f}", f"{100 * fraction:.1f}%", second["written"],
            f"{peak / 2**20:.0f}", f"{budget / 2**20:.0f}",
            f"{first['executes'] / len(entries):.1f}", f"{ratio:.2f}x",
        ])
        report.check(
            f"second sync under 5% of the first ({profile.name})", fraction < 0.05,
            f"{100 * fraction:.1f}% ({second['seconds']:.2f} s of {first['seconds']:.1f} s)",
        )
        report.check(
            f"sync peak memory under 3x largest session + 100 MB ({profile.name})", peak < budget,
            f"{peak / 2**20:.0f} MiB (budget {budget / 2**20:.0f} MiB)",
        )
        report.check(
            f"store bytes at most the snapshot bytes ({profile.name})", ratio <= 1.0,
            f"{ratio:.2f}x ({measured['storeBytes'] / 1e6:.1f} MB for {event_bytes / 1e6:.1f} MB)",
        )
    if len(peaks) == 2:
        growth = peaks[1] / peaks[0] - 1
        report.check(
            "sync peak memory flat (within 10%) from the full corpus to twice its sessions",
            growth <= 0.10, f"{100 * growth:+.1f}% ({peaks[0] / 2**20:.0f} -> {peaks[1] / 2**20:.0f} MiB)",
        )
    report.table(
        "agentctl sync over the corpus (CorpusDriver, SQLite store)",
        ["corpus", "sessions", "MB", "largest MB", "first s", "first MB/s", "second s",
         "second/first", "second written", "peak MiB", "budget MiB", "executes/session",
         "store/input"],
        rows,
    )


if __name__ == "__main__":
    from tests.bench.run import Report

    bench = Report(quick="--quick" in sys.argv)
    run(bench)
    print(bench.render())

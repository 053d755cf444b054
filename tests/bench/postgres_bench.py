"""First sync and idle resync on PostgreSQL beside SQLite, for the same corpus.

The same measurement as sync_bench.py (`sync_twice`: the corpus-backed driver, each
sync pair in a fresh child process), once into a fresh SQLite file and once into a
fresh database on a throwaway PostgreSQL server on a Unix socket
(tests/support/postgres_server.py; durability off there, as the test server runs, so
the figures compare the stores' work and not the disk's fsync). Skipped, with a
note, where PostgreSQL's server programs are not installed.

Run alone: `python -m tests.bench.postgres_bench [--quick]`.
"""

from __future__ import annotations

import sys
from typing import Any

from tests.bench import corpus
from tests.bench.measure import run_child
from tests.bench.sync_bench import _inventory
from tests.support.postgres_server import PostgresServer, postgres_bindir


def run(report: Any) -> None:
    if postgres_bindir() is None:
        report.note("PostgreSQL sync benchmark skipped: PostgreSQL is not installed "
                    "(apt-get install postgresql)")
        return
    profile = corpus.QUICK if report.quick else corpus.FULL
    path = corpus.ensure(profile)
    inventory = str(_inventory(str(path)))
    server = PostgresServer.start()
    try:
        rows = []
        for name, url in (("SQLite", ""), ("PostgreSQL", server.create_database("bench"))):
            measured = run_child("tests.bench.sync_bench", "sync_twice", str(path), inventory, url)
            first, second = measured["first"], measured["second"]
            rows.append([
                name, profile.name, first["sessions"], f"{first['seconds']:.1f}",
                f"{second['seconds']:.2f}", f"{100 * second['seconds'] / first['seconds']:.1f}%",
                second["written"], f"{measured['peakRssBytes'] / 2**20:.0f}",
            ])
    finally:
        server.stop()
    report.table(
        "agentctl sync, SQLite beside PostgreSQL (same corpus, CorpusDriver)",
        ["store", "corpus", "sessions", "first s", "idle resync s", "resync/first",
         "resync written", "peak MiB"],
        rows,
    )


if __name__ == "__main__":
    from tests.bench.run import Report

    bench = Report(quick="--quick" in sys.argv)
    run(bench)
    print(bench.render())

"""Deterministic store figures for the target and sync benches: SQLite `execute` and
`executemany` calls (and commits) made by this process, and a store's bytes on disk.

`count_sqlite_calls()` makes every later `sqlite3.connect` return a connection that
counts its calls; call it in the benchmark's child process before the store opens.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

CALLS = {"execute": 0, "commit": 0}


class _CountingConnection(sqlite3.Connection):
    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        CALLS["execute"] += 1
        if sql == "COMMIT":
            CALLS["commit"] += 1
        return super().execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        CALLS["execute"] += 1
        return super().executemany(sql, *args)


def count_sqlite_calls() -> None:
    real = sqlite3.connect
    if getattr(real, "counting", False):
        return

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs.setdefault("factory", _CountingConnection)
        return real(*args, **kwargs)

    connect.counting = True  # type: ignore[attr-defined]
    sqlite3.connect = connect  # type: ignore[assignment]


def calls() -> dict[str, int]:
    return dict(CALLS)


def store_bytes(database: Path) -> int:
    """The database file's bytes once its write-ahead log is checkpointed into it (what
    the store keeps, not what a run happened to leave in the log)."""
    conn = sqlite3.connect(database)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return sum(p.stat().st_size for p in database.parent.glob(database.name + "*"))

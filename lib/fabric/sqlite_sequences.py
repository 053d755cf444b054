"""The `sequences` table: named counters per space (observation sequences and the like),
each statement run inside the caller's connection and transaction."""

from __future__ import annotations

import sqlite3


def next_value(conn: sqlite3.Connection, space_id: int, name: str) -> int:
    """Counter `name` plus one (1 for a new one), in the caller's write transaction."""
    (value,) = conn.execute(
        "INSERT INTO sequences (space_id, name, value) VALUES (?, ?, 1) "
        "ON CONFLICT (space_id, name) DO UPDATE SET value = value + 1 RETURNING value",
        (space_id, name),
    ).fetchone()
    return value


def values(conn: sqlite3.Connection, space_id: int) -> dict[str, int]:
    return dict(conn.execute("SELECT name, value FROM sequences WHERE space_id = ?", (space_id,)).fetchall())


def advance(conn: sqlite3.Connection, space_id: int, name: str, value: int) -> None:
    """Counter `name` at least `value`, in the caller's write transaction."""
    conn.execute(
        "INSERT INTO sequences (space_id, name, value) VALUES (?, ?, ?) "
        "ON CONFLICT (space_id, name) DO UPDATE SET value = max(value, excluded.value)",
        (space_id, name, value),
    )

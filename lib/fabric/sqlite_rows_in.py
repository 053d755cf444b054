"""What a commit on the rules' path reads of its cells' rows (sqlite_store.py's `_commit`
and `_check`, inside their transaction): each row's seq, labels and liveness, by batches
of IDs, and a live cell's fvj1 text when resolve_commit asks for it (moved out of
sqlite_store.py, which keeps the rest of the reads and writes)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable

from lib.fabric import stored_values
from lib.fabric.cell_keys import cell, key, keys
from lib.fabric.commit_rules import Row
from lib.fabric.sqlite_connections import rows_in_batches
from lib.fabric.sqlite_labels import LabelRows


def rows_of(conn: sqlite3.Connection, labels: LabelRows, space_id: int, cells: set[str]) -> dict[str, Row]:
    """The rows the cells have (absent ones have none)."""
    rows: dict[str, Row] = {}
    for stored_id, seq, labels_id, live in rows_in_batches(
        conn, "SELECT cell_id, seq, labels_id, value IS NOT NULL FROM documents "
        "WHERE space_id = ? AND cell_id IN ({marks})", space_id, keys(list(cells)),
    ):
        rows[cell(stored_id)] = Row(seq, labels.labels(conn, labels_id), bool(live))
    return rows


def texts_of(conn: sqlite3.Connection, space_id: int, space: str, cells: Iterable[str]) -> dict[str, str]:
    """The fvj1 text of each live cell of `cells`, by ID (Store.read_texts)."""
    return {cell(stored_id): stored_values.decode(stored, space) for stored_id, stored in rows_in_batches(
        conn, "SELECT cell_id, value FROM documents WHERE space_id = ? AND value IS NOT NULL AND cell_id IN ({marks})",
        space_id, keys(list(dict.fromkeys(cells))),
    )}


def text_loader(conn: sqlite3.Connection, space_id: int, space: str) -> Callable[[str], str]:
    """The fvj1 text of a live cell, for resolve_commit's patches and hash checks."""

    def load_text(cell_id: str) -> str:
        (stored,) = conn.execute(
            "SELECT value FROM documents WHERE space_id = ? AND cell_id = ?",
            (space_id, key(cell_id)),
        ).fetchone()
        return stored_values.decode(stored, space)

    return load_text

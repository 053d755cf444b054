"""The SQLite store's `labels` table: each distinct labels JSON once, rows naming it by id.

Labels rows are only ever inserted, never changed nor deleted, so an id read from a
committed row names the same labels for good and is cached without bound checks; the
labels of one store are few (one set per owner and writer). An id inserted by a
transaction is remembered only once that transaction commits: a rollback takes it back.
"""

from __future__ import annotations

import sqlite3

from lib.fabric.store import Labels


class LabelRows:
    def __init__(self) -> None:
        self._by_id: dict[int, Labels] = {}
        self._ids: dict[Labels, int] = {}  # committed rows only

    def labels(self, conn: sqlite3.Connection, labels_id: int) -> Labels:
        labels = self._by_id.get(labels_id)
        if labels is None:
            (text,) = conn.execute("SELECT json FROM labels WHERE id = ?", (labels_id,)).fetchone()
            labels = self._by_id[labels_id] = Labels.from_json(text)
        return labels

    def id_of(self, conn: sqlite3.Connection, labels: Labels, new: dict[Labels, int]) -> int:
        """The labels row's id, inserted when missing (inside the caller's write
        transaction); ids it inserted go to `new`, for `committed` once it commits."""
        found = self._ids.get(labels) or new.get(labels)
        if found is None:
            text = labels.to_json()
            conn.execute("INSERT OR IGNORE INTO labels (json) VALUES (?)", (text,))
            (found,) = conn.execute("SELECT id FROM labels WHERE json = ?", (text,)).fetchone()
            new[labels] = found
        return found

    def committed(self, new: dict[Labels, int]) -> None:
        self._ids.update(new)

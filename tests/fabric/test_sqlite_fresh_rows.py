"""SQLiteStore's commit of whole-value writes to cells that have no row, from a writer that
expects them new (Transaction.expect_new_cells; sqlite_rows_out.py): inserted without
reading the rows first, and the rules applied as before when a row exists."""

from __future__ import annotations

import sqlite3

import pytest

from lib.fabric.sqlite_store import SQLiteStore
from lib.fabric.store import Labels
from lib.fabric.store_errors import WriteDenied
from tests.fabric.store_contract import ME, SPACE, put, value_of

OTHER = "did:key:z6MkOther"
ROW_READ = "SELECT cell_id, seq, labels_id, value IS NOT NULL FROM documents"


def _commit(store: SQLiteStore, cells: dict[str, object], *, writer: str = ME, labels: Labels | None = None,
            expect_new: bool = True) -> int:
    with store.transaction(SPACE, writer) as tx:
        if expect_new:
            tx.expect_new_cells()
        for cell_id, value in cells.items():
            tx.write(cell_id, value, labels)
        return tx.commit()


def _rows(path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT cell_id, seq, labels_id, value FROM documents ORDER BY cell_id").fetchall()


def test_a_commit_of_new_cells_only_reads_none_of_their_rows_and_writes_them_at_one_seq(tmp_path, traced):
    with SQLiteStore(tmp_path / "f.db") as store:
        put(store, "of:before", 0)
        traced.clear()
        seq = _commit(store, {f"of:new{i}": {"n": i} for i in range(600)})
        assert not [s for s in traced if s.startswith(ROW_READ)]
        assert [value_of(store, f"of:new{i}") for i in (0, 599)] == [{"n": 0}, {"n": 599}]
        assert {store.read(SPACE, f"of:new{i}").seq for i in range(600)} == {seq} and store.head(SPACE) == seq
        assert store.read(SPACE, "of:new7").labels == Labels.owned_by(ME)


def test_a_commit_without_the_hint_reads_its_rows_first(tmp_path, traced):
    """An ordinary overwrite (an index root, a receipt) never tries the fresh insert
    and then falls back: only a writer that expects new cells skips the read."""
    with SQLiteStore(tmp_path / "f.db") as store:
        traced.clear()
        _commit(store, {f"of:new{i}": i for i in range(10)}, expect_new=False)
        assert [s for s in traced if s.startswith(ROW_READ)]
        assert value_of(store, "of:new9") == 9


def test_fresh_rows_are_the_bytes_the_rules_write(tmp_path):
    """The same cells into two stores, the second made to take the rules' path (one of
    the cells written first, on its own): the same rows but for their seqs."""
    cells = {f"of:c{i}": {"text": "x" * (i * 97), "i": i} for i in range(300)}
    with SQLiteStore(tmp_path / "fresh.db") as store:
        _commit(store, cells)
        _commit(store, {"of:c5": "again"})  # an existing cell: the rules' path
    with SQLiteStore(tmp_path / "rules.db") as store:
        first = _commit(store, {"of:c0": cells["of:c0"]})
        with store.transaction(SPACE, ME) as tx:  # of:c0 exists, so these take the rules' path
            for cell_id, value in cells.items():
                tx.write(cell_id, value)
            tx.commit()
        _commit(store, {"of:c5": "again"})
    fresh, rules = _rows(tmp_path / "fresh.db"), _rows(tmp_path / "rules.db")
    assert first == 1
    assert [r[:1] + r[2:] for r in fresh] == [r[:1] + r[2:] for r in rules]  # seqs differ by the extra commit


def test_a_new_batch_holding_a_cell_another_writer_owns_is_denied_and_leaves_nothing(tmp_path, traced):
    with SQLiteStore(tmp_path / "f.db") as store:
        put(store, "of:m", "theirs", labels=Labels((ME,), (OTHER,)))
        head = store.head(SPACE)
        traced.clear()
        with pytest.raises(WriteDenied):
            _commit(store, {"of:a": 1, "of:m": "forged", "of:z": 2}, labels=Labels((ME,), (ME, "did:key:z6MkNew")))
        assert [s for s in traced if s.startswith(ROW_READ)]  # the rules read the rows
        assert store.read(SPACE, "of:a") is None and store.read(SPACE, "of:z") is None
        assert value_of(store, "of:m") == "theirs" and store.head(SPACE) == head
        # the labels row inserted under the rolled-back savepoint is not remembered as committed
        seq = _commit(store, {"of:b": 3}, labels=Labels((ME,), (ME, "did:key:z6MkNew")))
        assert store.read(SPACE, "of:b").labels == Labels((ME,), (ME, "did:key:z6MkNew")) and seq == head + 1


def test_a_new_batch_holding_a_cell_the_writer_may_change_rewrites_it_keeping_its_labels(tmp_path):
    shared = Labels((ME,), (ME, OTHER))
    with SQLiteStore(tmp_path / "f.db") as store:
        put(store, "of:m", "old", labels=shared)
        seq = _commit(store, {"of:a": 1, "of:m": "new"}, writer=OTHER)
        assert value_of(store, "of:m") == "new" and store.read(SPACE, "of:m").labels == shared
        assert store.read(SPACE, "of:a").labels == Labels.owned_by(OTHER)
        assert {store.read(SPACE, c).seq for c in ("of:a", "of:m")} == {seq}

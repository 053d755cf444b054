"""The prior rows read from the store held as one table (prior_table.py, session 27): the
rows it makes are the rows the commit read back, looked up by key, and the table holds no
Python object per row."""

from __future__ import annotations

import gc
from pathlib import Path

from lib.fabric.index_store import read_prior
from lib.fabric.packed_previews import StoredPreviews
from lib.fabric.prior_table import PriorRows, TableRow, row_fields
from lib.fabric.values import Link
from tests.fabric.target_helpers import descriptor, make_env, publish, snapshot

SPACE = "did:key:z6MkTable"


def _row(n: int) -> dict:
    return {"key": f"codex/s{n}", "sourceId": "codex", "status": "complete", "title": f"t{n}",
            "gitWorktreeRoot": None, "recentMessages": None}


def _table(rows: int) -> PriorRows:
    table = PriorRows(None, SPACE)
    for n in range(rows):
        table.add(_row(n), Link.trusted("of:fid1:" + f"{n:043d}", SPACE), True)
    assert table.duplicate() is None
    return table


def test_the_table_makes_the_rows_a_full_read_gives(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("a"), snapshot("b", messages=3), snapshot("c")])
    graphs, cells = target.graphs, target.cells
    committed = graphs.committed[cells.all].ready()  # the rows this process committed
    graphs.committed.clear()
    prior = read_prior(graphs, cells)
    assert type(prior.rows) is PriorRows
    for key, row in committed.rows.items():
        made = prior.rows[key]
        assert type(made) is TableRow and made == row and made.key is key
        assert made.stored_previews() == StoredPreviews(target.store, target.space, prior.row_links[key].id)
        assert row_fields(prior.rows, key)["snapshotHash"] == row["snapshotHash"]
    assert prior.rows.get("codex/zzz") is None and "codex/zzz" not in prior.rows


def test_a_key_seen_twice_is_the_later_row() -> None:
    table = _table(50)
    table.add(_row(7), None, False)
    assert table.duplicate() == 50


def test_the_table_holds_no_object_a_row() -> None:
    small, large = _table(10), _table(2000)
    assert large["codex/s1999"]["title"] == "t1999" and large.link(3).id.endswith("3")

    def held(table: PriorRows) -> int:  # the objects its parts refer to
        return len(gc.get_referents(*vars(table).values()))

    assert held(large) == held(small)

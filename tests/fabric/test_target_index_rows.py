"""A publication never drops an index row it cannot read: it fails, naming the row, and
writes nothing (a dropped row's session could vanish without ever being marked deleted).
Readers still show the rows they can read."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.fabric.graph_read import read_graph_value
from lib.fabric.schemas import FabricSchemaError
from lib.fabric.session_reader import SessionReader
from tests.fabric.target_helpers import SPACE, descriptor, make_env, publish, rows, snapshot


def _break_row(target, key: str) -> None:
    """Overwrite one row cell of the complete index with a row missing its driver."""
    stored = target.store.read(target.space, target.all_index_id()).value
    position = list(rows(target)).index(key)
    link = stored["sessions"][position]
    row = dict(read_graph_value(target.store, target.space, link.id))
    del row["driver"]
    with target.store.transaction(target.space, target.writer) as tx:
        tx.write(link.id, row, target.labels)
        tx.commit()


def test_a_publication_over_an_invalid_row_fails_naming_it_and_writes_nothing(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot("s1"), snapshot("s2")])
    _break_row(target, "codex/s2")
    head = target.store.head(SPACE)

    with pytest.raises(FabricSchemaError) as failure:
        publish(target, descriptor(), [snapshot("s1", messages=4)])

    assert failure.value.code == "invalid-index-row"
    assert "row 1 (codex/s2)" in failure.value.message
    assert "nothing was published" in failure.value.message
    assert target.store.head(SPACE) == head
    assert not target.lock.held


def test_readers_still_show_the_rows_they_can_read(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot("s1"), snapshot("s2")])
    _break_row(target, "codex/s2")
    index = SessionReader(target.store, SPACE, env.owner).index("all")
    assert [row["key"] for row in index.sessions] == ["codex/s1"]

"""Session 30 (issue 14 goal 4): a publication with no prior row (a first sync) resolves
its new rows as places of its touches' own table (publication_resolve.py), its commit
reads them from the values one at a time and keeps their links by place (index_rows.py),
and links the rows written early as they were written (early_rows.py): no row object,
key string, Link or dict entry a session, and the same index as rows made one by one."""

from __future__ import annotations

import gc
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import lib.fabric.graph_batch as graph_batch
import lib.fabric.index_store as index_store
from lib.fabric import index_rows, publication_resolve
from lib.fabric import publication as publication_module
from lib.fabric.packed_rows import PackedRow
from lib.fabric.prior_table import PriorRows
from lib.fabric.values import Link
from tests.fabric.target_helpers import (
    START,
    descriptor,
    index,
    make_env,
    prepared,
    publish,
    snapshot,
)

NAMES = [f"s{n:02d}" for n in range(11, -1, -1)]  # listed out of key order


def _times(n: int) -> Any:
    # some sessions share a time (ordered by key then), one has none
    return None if n == 5 else START - timedelta(days=n // 3)


def _snapshots() -> list[Any]:
    return [snapshot(name, messages=n % 3 + 1, updated_at=_times(n)) for n, name in enumerate(NAMES)]


def test_a_first_syncs_rows_are_resolved_and_linked_as_places_of_its_touches_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = make_env(tmp_path).target()
    seen: dict[str, Any] = {}
    real_resolve, real_linker = publication_module.resolve, index_store.RowLinker

    def resolve(prior: Any, touches: Any, *args: Any, **kwargs: Any) -> Any:
        out = real_resolve(prior, touches, *args, **kwargs)
        seen["table"], seen["touches"] = out.rows.table, touches.table
        seen["kept"], seen["others"] = list(out.rows.kept_places()), dict(out.rows.others)
        seen["held"] = [r for r in gc.get_referents(out.rows, out.rows.others) if isinstance(r, PackedRow)]
        return out

    class Linker(real_linker):  # type: ignore[misc, valid-type]
        def link(self, *args: Any) -> None:
            super().link(*args)
            seen["links"] = self.links

    monkeypatch.setattr(publication_module, "resolve", resolve)
    monkeypatch.setattr(index_store, "RowLinker", Linker)
    summary, _ = publish(target, descriptor(), _snapshots())
    assert type(seen["table"]) is PriorRows and seen["table"] is seen["touches"]  # the touches' own table
    assert seen["kept"] == list(range(len(NAMES))) and not seen["others"] and not seen["held"]
    links = seen["links"]
    assert len(links) == len(NAMES) and not links._others  # every link held at its row's place
    assert summary.session_count == len(NAMES)
    stored = index(target)["sessions"]
    assert [r["key"] for r in stored] == [f"codex/{name}" for name in _expected_order()]
    assert [links[row["key"]].id for row in stored] == [
        link.id for link in target.store.read(target.space, target.all_index_id()).value["sessions"]]


def _expected_order() -> list[str]:
    """row_order: newest first, a time shared by key, no time last."""
    timed = sorted((n for n in range(len(NAMES)) if _times(n) is not None), key=lambda n: NAMES[n])
    timed.sort(key=lambda n: _times(n), reverse=True)
    return [NAMES[n] for n in timed] + [NAMES[5]]


def test_a_first_syncs_index_equals_the_one_its_rows_made_one_by_one_give(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stores of one identity and clock: a first sync as it runs, and one whose
    resolution makes each row (the touches' table not used by place)."""
    (tmp_path / "places").mkdir()
    (tmp_path / "rows").mkdir()
    places_env = make_env(tmp_path / "places")
    shutil.copy(tmp_path / "places" / "identity", tmp_path / "rows" / "identity")
    rows_env = make_env(tmp_path / "rows")
    for name, env in (("places", places_env), ("rows", rows_env)):
        with monkeypatch.context() as patched:
            patched.setattr(index_store, "ROW_BATCH", 3)
            if name == "rows":
                patched.setattr(publication_resolve.Touches, "others", lambda self: list(self.unplaced()))
                patched.setattr(publication_resolve, "_resolve_entries", lambda *args: None)
            target = env.target()
            publish(target, descriptor(), _snapshots())
            publish(target, descriptor(), [snapshot("s03", messages=4, text="changed", updated_at=_times(3))],
                    listed=NAMES)
    places, made = places_env.target(), rows_env.target()
    assert index(places) == index(made) and index(places, "recent") == index(made, "recent")


def test_a_first_syncs_rows_written_early_are_linked_as_they_were_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_store, "ROW_BATCH", 2)
    monkeypatch.setattr(graph_batch, "MAX_SESSIONS", 1)  # each graph committed once the next is staged
    target = make_env(tmp_path).target()
    source = descriptor()
    with target.publication() as pub:
        pub.begin_source(source, None)
        for n in range(7):
            pub.add_prepared(prepared(source, snapshot(f"s{n}", messages=3)))
        pub.batch.flush()
        pub._early.flush()  # every row's cells written (not linked)
        written = {cell: seq for cell, seq in target.store.changes_since(target.space, 0)}
        pub.end_source(None, source.id)
        pub.commit()
    links = [link.id for link in target.store.read(target.space, target.all_index_id()).value["sessions"]]
    assert len(links) == 7 and all(cell in written for cell in links)
    # linked as written: not one rewritten by the commit
    assert {cell: target.store._read_version(target.space, cell) for cell in links} == {
        cell: written[cell] for cell in links}


def test_index_links_hold_a_tables_rows_at_their_places_and_any_other_by_key() -> None:
    table = PriorRows(None, "", cells=False)
    table.duplicate()
    for name in ("a", "b", "c"):
        table.put({"key": name, "status": "complete"})
    links = index_rows.IndexLinks(table, "did:key:space")
    placed = Link("of:fid1:" + "A" * 43, "did:key:space")
    other_space = Link("of:fid1:" + "B" * 43, "did:key:elsewhere")
    links["b"] = placed
    links["c"] = other_space  # another space: by key
    links["z"] = placed  # no row of the table: by key
    assert links["b"] == placed and links["c"] == other_space and links["z"] == placed
    assert "a" not in links and "b" in links and len(links) == 3
    assert set(links) == {"b", "c", "z"} and set(links._others) == {"c", "z"}
    links["c"] = Link("of:fid1:" + "C" * 43, "did:key:space")  # now at its place
    assert set(links._others) == {"z"} and links["c"].id.endswith("C" * 43) and len(links) == 3
    with pytest.raises(KeyError):
        links["a"]


def test_row_groups_take_rows_only_as_each_group_is_yielded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_store, "ROW_BATCH", 3)
    taken: list[int] = []

    def rows() -> Any:
        for n in range(10):
            taken.append(n)
            yield {"key": f"k{n}"}

    groups = index_store.row_groups(rows())
    assert [r["key"] for r in next(groups)] == ["k0", "k1", "k2"]
    assert len(taken) == 4  # the fourth row told the group was full
    assert [len(group) for group in groups] == [3, 3, 1]

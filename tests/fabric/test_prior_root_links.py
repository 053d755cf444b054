"""The prior complete index's row links read as the IDs they are stored as (session 24):
`read_root` leaves the root's short row links unexpanded (`SameSpaceLinks`), and the
prior made from them holds the very links, rows and versions a full read of the root
gives."""

from __future__ import annotations

import gc
from pathlib import Path

from lib.fabric.index_store import read_prior
from lib.fabric.packed_rows import PackedRow
from lib.fabric.prior_rows import RowLinks, read_root
from lib.fabric.prior_table import PriorRows
from lib.fabric.stored_values import SameSpaceLinks
from lib.fabric.values import Link
from tests.fabric.target_helpers import descriptor, make_env, prepared, publish, rows, snapshot


def test_the_roots_row_links_are_read_as_their_stored_ids_and_make_the_same_prior(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("a"), snapshot("b", messages=3), snapshot("c")])
    graphs, cells = target.graphs, target.cells
    full = target.store.read(target.space, cells.all)  # every link expanded and parsed

    root = read_root(graphs, cells.all)
    assert type(root.value["sessions"]) is SameSpaceLinks
    assert list(root.value["sessions"]) == [link.id for link in full.value["sessions"]]
    assert root.seq == full.seq
    assert {k: v for k, v in root.value.items() if k != "sessions"} == {
        k: v for k, v in full.value.items() if k != "sessions"}

    graphs.committed.clear()  # read from the store, not from this process's memory
    prior = read_prior(graphs, cells)
    assert list(prior.row_links.values()) == full.value["sessions"]
    assert all(type(link) is Link and link.path == () for link in prior.row_links.values())
    assert set(prior.rows) == {"codex/a", "codex/b", "codex/c"}
    assert prior.versions[cells.all] == full.seq


def test_a_retained_sessions_intent_is_keyed_by_the_prior_rows_own_key_string(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    source = descriptor()
    publish(target, source, [snapshot("a")])
    with target.publication(preserve_untouched_status=False, checkout_directories=None) as pub:
        pub.begin_source(source, None)
        assert pub.add_retained(source.id, snapshot("a").summary).action == "retained"
        (key,) = pub._touches
        assert key == "codex/a" and key is pub.prior.rows["codex/a"]["key"]  # one string, not two


def test_retained_sessions_share_one_prior_touch_and_commit_their_prior_rows_themselves(tmp_path: Path) -> None:
    """Issue 14 goal 4: a retained session whose row stays its prior row is noted with
    its source's one "prior" touch, not a touch a session, and the commit keeps that
    prior row (itself) and records the session's observation."""
    target = make_env(tmp_path).target()
    source = descriptor()
    publish(target, source, [snapshot("a"), snapshot("b"), snapshot("c")])
    index_before = target.store.read(target.space, target.cells.all).value
    with target.publication(preserve_untouched_status=False, checkout_directories=None) as pub:
        pub.begin_source(source, None)
        for name in ("a", "b", "c"):
            assert pub.add_retained(source.id, snapshot(name).summary).action == "retained"
        touches = list(pub._touches.values())
        assert len(touches) == 3 and all(t is touches[0] for t in touches)
        assert touches[0].kind == "prior" and touches[0].row is None
        sequence = touches[0].sequence
        pub.end_source({"sourceId": source.id, "inventoryComplete": True, "complete": True,
                        "listedSessionIds": ["a", "b", "c"]})
        pub.commit()
    after = target.store.read(target.space, target.cells.all).value
    assert [link.id for link in after["sessions"]] == [link.id for link in index_before["sessions"]]
    ordering = target.store.read(target.space, target.cells.ordering).value
    assert all(ordering["sessions"][f"codex/{name}"] == sequence for name in ("a", "b", "c"))


def test_a_prior_read_from_the_store_makes_its_row_links_from_the_rows_stored_previews(tmp_path: Path) -> None:
    """Issue 14 goal 4: no Link is held per row of the usual shape; each is made, equal
    to the stored one, from the cell ID the prior table holds for its row."""
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("a"), snapshot("b", messages=3)])
    graphs, cells = target.graphs, target.cells
    full = target.store.read(target.space, cells.all)
    graphs.committed.clear()
    prior = read_prior(graphs, cells)
    assert type(prior.row_links) is RowLinks and type(prior.rows) is PriorRows
    assert not prior.rows._other  # every row's cell held as its ID's 43 bytes, no Link
    assert dict(prior.row_links) == {row["key"]: link for row, link in zip(
        (target.store.read(target.space, link.id).value for link in full.value["sessions"]),
        full.value["sessions"], strict=True)}
    assert "codex/zzz" not in prior.row_links


def test_a_read_sessions_row_is_held_until_the_commit_in_the_touches_table_no_object_a_session(
    tmp_path: Path,
) -> None:
    """Issue 14 goal 4: a session's new row is held as an entry of the touches' table (its
    block in the table's file, its previews' place in the spill), no `Touch`, row, key
    string or stand-in object a session (25,000 of them in a first sync); the commit
    reads it as the "row" touch of its source's sequence and publishes that row."""
    target = make_env(tmp_path).target()
    source = descriptor()
    with target.publication(preserve_untouched_status=False, checkout_directories=None) as pub:
        pub.begin_source(source, None)
        sequence = pub._sources[source.id].sequence
        for name in ("a", "b"):
            assert pub.add_prepared(prepared(source, snapshot(name, messages=2))).action == "written"
        table = pub._touches._table
        assert list(pub._touches) == ["codex/a", "codex/b"] and not table._other  # previews as their place
        held = [*gc.get_referents(pub._touches), *vars(table).values()]
        held += gc.get_referents(*held)
        assert not any(type(o) is PackedRow or o == "codex/a" for o in held)  # no row, no key string
        touch = pub._touches["codex/a"]
        assert (touch.kind, touch.source_id, touch.sequence) == ("row", source.id, sequence)
        assert isinstance(touch.row, PackedRow) and touch.row._file is pub._touches.blocks
        assert len(touch.row["recentMessages"]) == 2 and touch.row["nativeSessionId"] == "a"
        pub.end_source({"sourceId": source.id, "inventoryComplete": True, "complete": True,
                        "listedSessionIds": ["a", "b"]})
        pub.commit()
    assert set(rows(target)) == {"codex/a", "codex/b"}
    ordering = target.store.read(target.space, target.cells.ordering).value
    assert ordering["sessions"] == {"codex/a": sequence, "codex/b": sequence}

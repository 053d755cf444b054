"""The prior complete index's row links read as the IDs they are stored as (session 24):
`read_root` leaves the root's short row links unexpanded (`SameSpaceLinks`), and the
prior made from them holds the very links, rows and versions a full read of the root
gives."""

from __future__ import annotations

from pathlib import Path

from lib.fabric.index_store import read_prior
from lib.fabric.prior_rows import read_root
from lib.fabric.stored_values import SameSpaceLinks
from lib.fabric.values import Link
from tests.fabric.target_helpers import descriptor, make_env, publish, snapshot


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

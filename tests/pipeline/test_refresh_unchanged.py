"""A targeted refresh of a session that did not change writes only the observation
ordering: the indexes keep their cells and generation, and the ordering still records
the refresh (an older collection finishing later keeps the refreshed row)."""

from __future__ import annotations

from pathlib import Path

from lib.fabric.index_store import IndexCells
from lib.fabric.ordering import OrderingState
from lib.pipeline.refresh import refresh_session
from tests.fabric.target_helpers import (
    changed_since,
    descriptor,
    index,
    key,
    make_env,
    prepared,
    publish,
    snapshot,
)
from tests.support.scripted_driver import ScriptedDriver


def _driver(*snapshots) -> ScriptedDriver:
    return ScriptedDriver(source_id="codex", kind="codex-app-server", snapshots=list(snapshots))


def _ordering(target) -> OrderingState:
    cells = IndexCells.of(target.space, target.owner)
    return OrderingState.from_value(target.store.read(target.space, cells.ordering).value)


def test_refresh_of_an_unchanged_session_writes_only_the_ordering(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    driver = _driver(snapshot("a"), snapshot("b"))
    assert refresh_session(target, driver, "a").action == "written"
    assert refresh_session(target, driver, "b").action == "written"
    before = target.store.head(target.space)
    generation = index(target)["generation"]
    sequence = _ordering(target).sessions[key("codex", "a")]

    assert refresh_session(target, driver, "a").action == "unchanged"

    cells = IndexCells.of(target.space, target.owner)
    assert changed_since(target.store, before) == {cells.ordering}
    assert index(target)["generation"] == index(target, "recent")["generation"] == generation
    assert _ordering(target).sessions[key("codex", "a")] > sequence  # the refresh is recorded


def test_refresh_after_an_unchanged_one_still_publishes_a_change(tmp_path: Path) -> None:
    """The ordering-only commit leaves this process's cached prior index right: the next
    refresh that changes the session rewrites its row and both roots."""
    target = make_env(tmp_path).target()
    driver = _driver(snapshot("a"))
    refresh_session(target, driver, "a")
    refresh_session(target, driver, "a")  # unchanged: ordering only
    generation = index(target)["generation"]
    driver.snapshots["a"] = snapshot("a", messages=4)

    assert refresh_session(target, driver, "a").action == "written"

    assert index(target)["generation"] == index(target, "recent")["generation"] == generation + 1
    assert len(index(target)["sessions"][0]["recentMessages"]) == 4


def test_full_publication_of_unchanged_sessions_still_raises_the_generation(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("s1")])
    generation = index(target)["generation"]
    publish(target, descriptor(), [snapshot("s1")])
    assert index(target)["generation"] == generation + 1


def test_an_unchanged_session_equal_to_its_row_is_held_as_that_row(tmp_path: Path) -> None:
    """No new row is made and packed (its previews spilled) for an unchanged session
    whose row would equal its prior row; a row that differs (other capabilities) is."""
    target = make_env(tmp_path).target()
    source = descriptor()
    publish(target, source, [snapshot("a")])
    row_key = key("codex", "a")
    for source_now, kept in ((source, True), (descriptor(cancel=True), False)):
        with target.publication(preserve_untouched_status=True) as pub:
            pub.begin_source(source_now, None)
            assert pub.add_prepared(prepared(source_now, snapshot("a"))).action == "unchanged"
            touch = pub._touches[row_key]
            # kept: the source's shared "prior" touch, no row of its own; else a new row
            assert (touch.kind == "prior" and touch.row is None) is kept
            assert touch.row is not pub.prior.rows[row_key]
            pub.commit()
    assert index(target)["sessions"][0]["capabilities"]["cancel"] is True

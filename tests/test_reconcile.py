"""Collection rules, shown with a fake provider (ScriptedDriver) for faults no real one shows."""

from __future__ import annotations

import gc
import weakref

import pytest

from lib.drivers.base import Cancelled, CancelSignal, DriverError
from lib.reconcile import (
    LISTING_LIMIT,
    CollectionOutcome,
    collect_source,
    stream_source,
)
from lib.types import SessionPage, SessionSummary
from tests.support.scripted_driver import ScriptedDriver, make_snapshot


def summary(session_id: str, **fields) -> SessionSummary:
    return SessionSummary(native_session_id=session_id, **fields)


def paged(*pages: list[str], snapshots: list[str] | None = None, **kwargs) -> ScriptedDriver:
    """A fake provider whose pages list the given ids; every id has a snapshot."""
    ids = snapshots or sorted({i for page in pages for i in page})
    scripted: dict[str | None, SessionPage] = {}
    for number, ids_on_page in enumerate(pages, start=1):
        cursor = None if number == 1 else f"p{number}"
        following = f"p{number + 1}" if number < len(pages) else None
        scripted[cursor] = SessionPage(
            sessions=[summary(i) for i in ids_on_page], next_cursor=following
        )
    return ScriptedDriver(snapshots=[make_snapshot(i) for i in ids], pages=scripted, **kwargs)


def codes(outcome: CollectionOutcome) -> list[str]:
    return [error.code for error in outcome.errors]


def test_a_fake_source_is_read_page_by_page_before_the_next_page_is_fetched():
    driver = paged(["a", "b"], ["c"])
    collected = collect_source(driver)
    assert driver.calls == [
        ("list", None),
        ("read", "a"),
        ("read", "b"),
        ("list", "p2"),
        ("read", "c"),
    ]
    assert [s.summary.native_session_id for s in collected.snapshots] == ["a", "b", "c"]


def test_a_clean_fake_collection_is_complete_with_its_counts():
    collected = collect_source(paged(["a", "b"], ["c"]))
    outcome = collected.outcome
    assert collected.complete and outcome.inventory_complete
    assert (outcome.pages, outcome.listings, outcome.listed, outcome.read) == (2, 3, 3, 3)
    assert outcome.listed_session_ids == ["a", "b", "c"]
    assert collected.errors == []


def test_the_stream_reads_the_next_session_only_when_the_consumer_advances():
    driver = paged(["a", "b"], ["c"])
    stream = stream_source(driver)
    first = next(stream)
    assert first.snapshot.summary.native_session_id == "a"
    assert driver.calls == [("list", None), ("read", "a")]
    next(stream)
    assert driver.calls[-1] == ("read", "b")
    next(stream)
    assert driver.calls[-2:] == [("list", "p2"), ("read", "c")]


def test_the_stream_holds_no_earlier_snapshot_while_the_next_is_read():
    driver = paged(["a", "b"], ["c", "d"])
    refs: list[weakref.ref] = []
    alive_during_reads: list[int] = []

    def count_live_snapshots(call):
        if call[0] == "read":
            gc.collect()
            alive_during_reads.append(sum(ref() is not None for ref in refs))

    driver.before_call.append(count_live_snapshots)
    for item in stream_source(driver):
        refs.append(weakref.ref(item.snapshot))
        del item  # the consumer has written the snapshot and lets it go
    assert alive_during_reads == [0, 0, 0, 0]

    # The same probe sees snapshots a consumer keeps, so the zeros above mean something.
    refs.clear()
    alive_during_reads.clear()
    kept = []
    for item in stream_source(driver):
        refs.append(weakref.ref(item.snapshot))
        kept.append(item)
    assert alive_during_reads == [0, 1, 2, 3]


def test_a_fake_provider_repeating_a_cursor_stops_enumeration_and_the_inventory_is_incomplete():
    driver = paged(["a"], ["b"], ["c"])
    driver.pages["p3"].next_cursor = "p2"
    guard_lists_beyond = 5

    def stop_runaway(call):
        if len(driver.calls_of("list")) > guard_lists_beyond:
            raise AssertionError("enumeration did not stop at the repeated cursor")

    driver.before_call.append(stop_runaway)
    collected = collect_source(driver)
    assert driver.calls_of("list") == [("list", None), ("list", "p2"), ("list", "p3")]
    assert codes(collected.outcome) == ["repeated-cursor"]
    assert [s.summary.native_session_id for s in collected.snapshots] == ["a", "b", "c"]
    assert not collected.outcome.inventory_complete and not collected.complete


def test_a_session_a_fake_provider_lists_again_is_read_once_with_one_error_per_repeat():
    driver = paged(["a", "b"], ["a", "c", "a"])
    collected = collect_source(driver)
    assert driver.calls_of("read") == [("read", "a"), ("read", "b"), ("read", "c")]
    assert codes(collected.outcome) == ["duplicate-session", "duplicate-session"]
    assert {e.native_session_id for e in collected.errors} == {"a"}
    assert collected.outcome.listed_session_ids == ["a", "b", "c"]
    assert (collected.outcome.listings, collected.outcome.listed) == (5, 3)
    assert not collected.outcome.inventory_complete and not collected.complete


def test_the_first_listing_of_a_repeated_session_decides_whether_it_is_retained():
    driver = ScriptedDriver(
        snapshots=[make_snapshot("a"), make_snapshot("b")],
        pages={
            None: SessionPage(
                sessions=[summary("a", title="keep"), summary("b")], next_cursor="p2"
            ),
            "p2": SessionPage(sessions=[summary("a"), summary("b", title="keep")]),
        },
    )
    collected = collect_source(driver, retain=lambda s: s.title == "keep")
    assert [s.native_session_id for s in collected.retained] == ["a"]
    assert driver.calls_of("read") == [("read", "b")]
    assert [s.summary.native_session_id for s in collected.snapshots] == ["b"]
    assert codes(collected.outcome) == ["duplicate-session", "duplicate-session"]


def test_a_page_that_would_pass_the_listing_limit_is_refused_before_it_is_kept():
    driver = paged(["a", "b", "c"], ["d", "d"], ["e"])
    collected = collect_source(driver, listing_limit=4)  # 3 + 2 listings, repeats included
    assert driver.calls_of("read") == [("read", "a"), ("read", "b"), ("read", "c")]
    assert driver.calls_of("list") == [("list", None), ("list", "p2")]
    assert codes(collected.outcome) == ["listing-limit"]
    assert collected.outcome.listed_session_ids == ["a", "b", "c"]
    assert (collected.outcome.pages, collected.outcome.listings) == (1, 3)
    assert not collected.outcome.inventory_complete and not collected.complete


def test_listings_up_to_the_limit_are_collected_completely():
    collected = collect_source(paged(["a", "b", "c"], ["d", "e"]), listing_limit=5)
    assert collected.complete and collected.outcome.listed == 5


def test_the_listing_limit_is_one_hundred_thousand():
    assert LISTING_LIMIT == 100_000


def test_a_failed_fake_read_is_recorded_without_discarding_the_good_snapshots():
    driver = paged(
        ["a", "b", "c"], read_faults={"b": DriverError("thread-gone", "thread b is gone")}
    )
    collected = collect_source(driver)
    assert [s.summary.native_session_id for s in collected.snapshots] == ["a", "c"]
    [error] = collected.errors
    assert error.to_wire() == {
        "stage": "read",
        "sourceId": "scripted",
        "nativeSessionId": "b",
        "code": "thread-gone",
        "message": "thread b is gone",
    }
    assert collected.outcome.inventory_complete and not collected.complete
    assert collected.outcome.read == 2


def test_an_unexpected_fake_read_exception_is_stored_as_read_failed_with_its_message_only():
    driver = paged(["a"], read_faults={"a": RuntimeError("socket closed")})
    [error] = collect_source(driver).errors
    assert (error.code, error.message) == ("read-failed", "socket closed")


def test_a_failed_fake_page_is_recorded_and_the_inventory_is_incomplete():
    driver = paged(["a"], ["b"], list_faults={"p2": DriverError("rpc-error", "thread/list failed")})
    collected = collect_source(driver)
    [error] = collected.errors
    assert (error.stage, error.code, error.native_session_id) == ("list", "rpc-error", None)
    assert [s.summary.native_session_id for s in collected.snapshots] == ["a"]
    assert not collected.outcome.inventory_complete and not collected.complete


def test_an_unexpected_fake_list_exception_is_stored_as_list_failed():
    driver = paged(["a"], list_faults={None: ValueError("bad page")})
    [error] = collect_source(driver).errors
    assert (error.stage, error.code, error.message) == ("list", "list-failed", "bad page")


def test_a_snapshot_reporting_itself_incomplete_makes_the_fake_collection_incomplete():
    driver = ScriptedDriver(snapshots=[make_snapshot("a"), make_snapshot("b", complete=False)])
    collected = collect_source(driver)
    assert len(collected.snapshots) == 2 and collected.errors == []
    assert collected.outcome.inventory_complete
    assert collected.outcome.incomplete_snapshots == 1
    assert not collected.complete


def test_inventory_lifecycle_fills_what_a_fake_read_leaves_null_and_a_read_value_wins():
    driver = ScriptedDriver(
        snapshots=[make_snapshot("a"), make_snapshot("b", archived=False, active=True)],
        pages={
            None: SessionPage(
                sessions=[
                    summary("a", archived=True, active=False),
                    summary("b", archived=True, active=False),
                ]
            )
        },
    )
    a, b = collect_source(driver).snapshots
    assert (a.summary.archived, a.summary.active) == (True, False)
    assert (b.summary.archived, b.summary.active) == (False, True)


def test_retained_summaries_are_listed_but_not_read():
    driver = paged(["a", "b", "c"])
    collected = collect_source(driver, retain=lambda s: s.native_session_id != "b")
    assert driver.calls_of("read") == [("read", "b")]
    assert [s.native_session_id for s in collected.retained] == ["a", "c"]
    assert collected.outcome.retained == 2 and collected.outcome.read == 1
    assert collected.outcome.listed_session_ids == ["a", "b", "c"]
    assert collected.complete


def test_the_stream_yields_snapshots_retained_summaries_and_errors_in_collection_order():
    driver = paged(["a", "b", "c"], ["d", "a"], read_faults={"b": DriverError("gone", "gone")})
    stream = stream_source(driver, retain=lambda s: s.native_session_id == "c")
    kinds = [
        (
            item.kind,
            (
                item.snapshot.summary if item.snapshot else item.summary or item.error
            ).native_session_id,
        )
        for item in stream
    ]
    assert kinds == [
        ("snapshot", "a"),
        ("error", "b"),
        ("retained", "c"),
        ("snapshot", "d"),
        ("error", "a"),
    ]
    assert [s.native_session_id for s in stream.retained] == ["c"]
    assert stream.finished


def test_the_outcome_is_readable_while_the_stream_runs_and_complete_only_at_the_end():
    stream = stream_source(paged(["a", "b"]))
    next(stream)
    assert stream.outcome.read == 1 and not stream.outcome.complete
    next(stream)
    assert not stream.outcome.complete
    assert list(stream) == []
    assert stream.outcome.complete


def test_a_stream_closed_early_leaves_its_outcome_incomplete():
    stream = stream_source(paged(["a", "b"]))
    next(stream)
    stream.close()
    assert not stream.outcome.complete and not stream.finished


def test_a_cancelled_signal_stops_the_stream_before_the_next_provider_call():
    signal = CancelSignal()
    driver = paged(["a", "b"])
    stream = stream_source(driver, signal)
    next(stream)
    signal.cancel()
    with pytest.raises(Cancelled):
        next(stream)
    assert driver.calls == [("list", None), ("read", "a")]
    assert codes(stream.outcome) == ["cancelled"]
    assert not stream.outcome.complete


def test_a_signal_cancelled_during_a_fake_read_discards_that_read_and_raises():
    signal = CancelSignal()
    driver = paged(["a", "b"])
    driver.before_call.append(lambda call: signal.cancel() if call == ("read", "a") else None)
    stream = stream_source(driver, signal)
    with pytest.raises(Cancelled):
        next(stream)  # the read of a returned, but its snapshot is not yielded
    assert driver.calls == [("list", None), ("read", "a")]
    assert stream.outcome.read == 0


def test_a_read_failing_because_the_signal_was_cancelled_raises_instead_of_being_recorded():
    signal = CancelSignal()
    driver = paged(["a"], read_faults={"a": DriverError("provider-exited", "stopped")})
    driver.before_call.append(lambda call: signal.cancel() if call[0] == "read" else None)
    stream = stream_source(driver, signal)
    with pytest.raises(Cancelled):
        next(stream)
    assert codes(stream.outcome) == ["cancelled"]


def test_a_signal_callback_is_asked_for_the_current_signal_at_every_boundary():
    signals = [CancelSignal()]
    driver = paged(["a"], ["b"])
    stream = stream_source(driver, lambda: signals[-1])
    next(stream)
    replacement = CancelSignal()
    replacement.cancel()
    signals.append(replacement)
    with pytest.raises(Cancelled):
        next(stream)
    assert driver.calls == [("list", None), ("read", "a")]


def test_a_signal_cancelled_before_collection_makes_no_provider_call():
    signal = CancelSignal()
    signal.cancel()
    driver = paged(["a"])
    with pytest.raises(Cancelled):
        collect_source(driver, signal)
    assert driver.calls == []


def test_an_empty_next_cursor_ends_enumeration_completely():
    driver = paged(["a"])
    driver.pages[None].next_cursor = ""
    collected = collect_source(driver)
    assert collected.complete and driver.calls_of("list") == [("list", None)]


def test_the_outcome_wire_form_uses_the_spec_names():
    driver = paged(["a", "a"])
    wire = collect_source(driver).outcome.to_wire()
    assert wire == {
        "sourceId": "scripted",
        "complete": False,
        "inventoryComplete": False,
        "pages": 1,
        "listings": 2,
        "listed": 1,
        "read": 1,
        "retained": 0,
        "incompleteSnapshots": 0,
        "errors": [
            {
                "stage": "list",
                "sourceId": "scripted",
                "nativeSessionId": "a",
                "code": "duplicate-session",
                "message": "source scripted listed session a again; the first listing was kept",
            }
        ],
        "listedSessionIds": ["a"],
        "targeted": False,
    }
    assert CollectionOutcome.model_validate(wire).to_wire() == wire


def test_a_materialised_collection_carries_the_source_descriptor_at_its_end():
    driver = paged(["a"])
    driver.before_call.append(
        lambda call: (
            setattr(driver.source.capabilities, "modes", ["plan"]) if call[0] == "read" else None
        )
    )
    collected = collect_source(driver)
    assert collected.source.id == "scripted"
    assert collected.source.capabilities.modes == ["plan"]
    assert collected.source is not driver.source


def test_a_stream_that_keeps_no_retained_summaries_yields_them_and_lets_each_go_once_dropped():
    driver = paged(["a", "b"], ["c", "d"])
    stream = stream_source(driver, retain=lambda _summary: True, keep_retained=False)
    gone: list[weakref.ref[SessionSummary]] = []
    ids = []
    for item in stream:
        assert item.kind == "retained" and item.summary is not None
        ids.append(item.summary.native_session_id)
        gone.append(weakref.ref(item.summary))
        del item
    gc.collect()
    assert ids == ["a", "b", "c", "d"]
    assert stream.retained == []
    assert list(stream.listed_ids) == ["a", "b", "c", "d"] and stream.outcome.retained == 4
    assert all(ref() is None for ref in gone)  # nothing in the stream (or the driver's pages) holds them

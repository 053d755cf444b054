"""The collection stream asks for the next page one ahead (lib/reconcile.py, SourceStream).

The real Codex driver's early pages are shown in tests/drivers/test_codex_listing_ahead.py.
Here a scripted driver that asks its (scripted) provider at once when a page is begun
stands in for the faults no real provider shows on demand: a page that cannot be asked
for, a repeated cursor, a listing past the limit, a cancelled collection. Hence `fake`.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lib.drivers.base import Cancelled, CancelSignal, DriverError
from lib.reconcile import collect_source, stream_source
from lib.types import SessionPage, SessionSummary
from tests.support.scripted_driver import ScriptedDriver, make_snapshot


class AheadDriver(ScriptedDriver):
    """Lists a page when it is begun (as Codex sends the request), records ("begin", cursor)."""

    def __init__(self, *args, begin_faults: dict[str | None, Exception] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.begin_faults = begin_faults or {}

    def begin_list_sessions(self, cursor: str | None = None) -> Callable[[], SessionPage]:
        self.calls.append(("begin", cursor))
        if cursor in self.begin_faults:
            raise self.begin_faults[cursor]
        try:
            page = self.list_sessions(cursor)
        except DriverError as exc:
            error = exc

            def fail() -> SessionPage:
                raise error

            return fail
        return lambda: page


def ahead(*pages: list[str], **kwargs) -> AheadDriver:
    ids = sorted({i for page in pages for i in page})
    scripted: dict[str | None, SessionPage] = {}
    for number, ids_on_page in enumerate(pages, start=1):
        cursor = None if number == 1 else f"p{number}"
        following = f"p{number + 1}" if number < len(pages) else None
        scripted[cursor] = SessionPage(
            sessions=[SessionSummary(native_session_id=i) for i in ids_on_page], next_cursor=following
        )
    return AheadDriver(snapshots=[make_snapshot(i) for i in ids], pages=scripted, **kwargs)


def test_the_next_page_is_begun_before_this_pages_sessions_are_read_fake():
    driver = ahead(["a", "b"], ["c"])
    collected = collect_source(driver)
    assert driver.calls == [
        ("begin", None), ("list", None),
        ("begin", "p2"), ("list", "p2"),
        ("read", "a"), ("read", "b"),
        ("read", "c"),
    ]
    assert collected.complete and collected.outcome.pages == 2


def test_a_page_that_cannot_be_asked_for_is_a_list_error_after_the_previous_pages_sessions_fake():
    driver = ahead(["a", "b"], ["c"], begin_faults={"p2": DriverError("transport-closed", "codex went away")})
    collected = collect_source(driver)
    assert [s.summary.native_session_id for s in collected.snapshots] == ["a", "b"]
    (error,) = collected.errors
    assert (error.stage, error.code, error.message) == ("list", "transport-closed", "codex went away")
    assert not collected.outcome.inventory_complete


def test_an_unexpected_failure_to_ask_for_a_page_is_stored_as_list_failed_fake():
    driver = ahead(["a"], ["b"], begin_faults={"p2": RuntimeError("boom")})
    collected = collect_source(driver)
    assert [(e.stage, e.code, e.message) for e in collected.errors] == [("list", "list-failed", "boom")]
    assert [s.summary.native_session_id for s in collected.snapshots] == ["a"]


def test_a_repeated_cursor_is_not_asked_for_again_fake():
    driver = ahead(["a"], ["b"], ["c"])
    driver.pages["p3"].next_cursor = "p2"
    collected = collect_source(driver)
    assert driver.calls_of("begin") == [("begin", None), ("begin", "p2"), ("begin", "p3")]
    assert [e.code for e in collected.errors] == ["repeated-cursor"]
    assert [s.summary.native_session_id for s in collected.snapshots] == ["a", "b", "c"]


def test_no_page_is_asked_for_past_a_page_over_the_listing_limit_fake():
    driver = ahead(["a", "b", "c"], ["d", "e"], ["f"])
    collected = collect_source(driver, listing_limit=4)
    assert driver.calls_of("begin") == [("begin", None), ("begin", "p2")]
    assert [e.code for e in collected.errors] == ["listing-limit"]
    assert collected.outcome.listed_session_ids == ["a", "b", "c"]


def test_a_collection_cancelled_before_it_starts_asks_for_no_page_fake():
    driver = ahead(["a"], ["b"])
    signal = CancelSignal()
    signal.cancel()
    stream = stream_source(driver, signal)
    with pytest.raises(Cancelled):
        next(stream)
    assert driver.calls == []
    assert [e.code for e in stream.outcome.errors] == ["cancelled"]


def test_a_driver_without_early_pages_lists_each_when_it_is_taken_fake():
    # the default (base.py): the scripted driver cannot serve two calls at once
    driver = ScriptedDriver(
        snapshots=[make_snapshot("a"), make_snapshot("b")],
        pages={None: SessionPage(sessions=[SessionSummary(native_session_id="a")], next_cursor="p2"),
               "p2": SessionPage(sessions=[SessionSummary(native_session_id="b")])},
    )
    collect_source(driver)
    assert driver.calls == [("list", None), ("read", "a"), ("list", "p2"), ("read", "b")]

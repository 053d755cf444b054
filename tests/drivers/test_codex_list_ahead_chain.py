"""The Codex listing's chain (lib/drivers/codex_list_ahead.py), over the real pinned
`codex app-server`: each page is asked as soon as the one before it is answered, within a
byte budget, and what the collection gets is what it got when it asked page by page."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.drivers.codex_list_ahead import HeldBytes
from lib.reconcile import stream_source
from lib.types import AgentSourceConfig
from tests.support.codex_home import demo_threads, make_codex_home, many_threads

WHEN = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
THREADS = [*demo_threads(), *many_threads(7, start=WHEN, turns=1)]
HANG_GUARD = 60.0  # seconds: only a hang fails on it


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return make_codex_home(tmp_path_factory.mktemp("codex-home"), THREADS)


@pytest.fixture
def driver(codex_bin, home) -> Iterator[CodexAppServerDriver]:
    config = AgentSourceConfig(id="codex", driver="codex-app-server", codex_bin=codex_bin, codex_home=str(home))
    driver = CodexAppServerDriver(config, page_size=2)
    try:
        driver.start()
        yield driver
    finally:
        driver.stop()


def page_by_page(driver: CodexAppServerDriver) -> list[tuple[str, str | None, bool]]:
    """Every listing, each page asked only once the one before it is taken (the chain
    held to nothing ahead), as (id, title, archived)."""
    budget, driver.listing.budget = driver.listing.budget, 0
    try:
        return listed(stream_source(driver, retain=lambda _summary: True))
    finally:
        driver.listing.budget = budget


def listed(stream) -> list[tuple[str, str | None, bool]]:  # noqa: ANN001
    items = list(stream)
    assert stream.outcome.inventory_complete is True
    return [(i.summary.native_session_id, i.summary.title, i.summary.archived) for i in items]


def wait_until(condition, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + HANG_GUARD
    while not condition():
        assert time.monotonic() < deadline, f"hang guard: {what}"
        time.sleep(0.01)


def chains_ended() -> bool:
    return not any(thread.name == "list-ahead" for thread in threading.enumerate())


def test_pages_are_asked_ahead_of_the_collection_and_the_listing_is_unchanged(driver):
    expected = page_by_page(driver)
    pages = -(-sum(not archived for _id, _title, archived in expected) // 2) + 1  # active pages, then archived
    stream = stream_source(driver, retain=lambda _summary: True)
    first = next(stream)  # page 1 taken; nothing more is taken while the chain runs
    wait_until(chains_ended, "the chain runs to the last page while nothing more is taken")
    # page 1 was asked by the collection, page 2 by whichever of the two came first, the rest ahead
    assert driver.listing.asked_ahead >= pages - 2
    assert driver.listing.most_held >= 2, "several answered pages waited for the collection"
    rest = listed(stream)
    assert [(first.summary.native_session_id, first.summary.title, first.summary.archived), *rest] == expected


def test_the_budget_bounds_the_pages_held(driver):
    driver.listing.budget = 1  # one answered page fills it
    stream = stream_source(driver, retain=lambda _summary: True)
    next(stream)
    time.sleep(0.5)  # room for a chain that ignored the budget to run on (not a timing assertion)
    assert driver.listing.most_held == 1
    rest = list(stream)
    assert stream.outcome.inventory_complete is True
    assert driver.listing.most_held == 1
    assert len(rest) == len(THREADS) - 1


def test_the_early_start_lists_before_the_collection_asks(driver):
    expected = page_by_page(driver)
    driver.list_ahead()  # sync's early start: the first page is asked now
    wait_until(lambda: driver.listing.asked_ahead >= 2, "the chain follows the first page")
    assert listed(stream_source(driver, retain=lambda _summary: True)) == expected


def test_a_later_listing_is_never_given_pages_asked_for_an_earlier_one(driver):
    ids = [thread_id for thread_id, _title, _archived in page_by_page(driver)]
    stream = stream_source(driver, retain=lambda _summary: True)
    next(stream)
    wait_until(lambda: driver.listing.asked_ahead >= 2, "page 2 and on asked ahead")
    stream.close()  # those pages are never taken
    renamed = ids[3]  # on page 2, asked (and answered) before the rename
    assert driver.rename_session(renamed, "renamed after the first listing").status == "succeeded"
    titles = {thread_id: title for thread_id, title, _archived in listed(
        stream_source(driver, retain=lambda _summary: True))}
    assert titles[renamed] == "renamed after the first listing"


def test_a_stopped_driver_ends_its_chain_and_lists_afresh_when_started_again(driver):
    expected = page_by_page(driver)
    stream = stream_source(driver, retain=lambda _summary: True)
    next(stream)
    driver.stop()  # pages asked ahead are dropped with the run
    wait_until(chains_ended, "the chain ends with the run")
    rest = list(stream)  # the page asked ahead fails where it is taken
    assert stream.outcome.inventory_complete is False
    assert [item.kind for item in rest][-1] == "error"
    driver.start()
    assert listed(stream_source(driver, retain=lambda _summary: True)) == expected


def test_a_page_that_fails_fails_where_it_is_taken_fake_failure(driver, monkeypatch):
    """A fake failure: Codex answers no thread/list with an error, so the transport's
    answer to the third page is replaced by one; the chain stops there, and the
    collection gets the error when it takes that page, as a page asked then would."""
    from lib.drivers.jsonrpc_messages import RpcError

    real = driver._ask_page  # noqa: SLF001
    asked: list[str | None] = []

    class Failing:
        def result_sized(self, signal=None):  # noqa: ANN001, ANN202, ARG002
            raise RpcError(-32603, "listing failed")

    def ask(cursor):  # noqa: ANN001, ANN202
        page = real(cursor)
        asked.append(cursor)
        if len(asked) == 3:
            page.pending = Failing()
        return page

    monkeypatch.setattr(driver.listing, "_ask", ask)
    stream = stream_source(driver, retain=lambda _summary: True)
    items = list(stream)
    assert stream.outcome.inventory_complete is False
    errors = [item for item in items if item.kind == "error"]
    assert len(errors) == 1 and "listing failed" in errors[0].error.message
    assert len([item for item in items if item.kind == "retained"]) == 4  # pages 1 and 2
    wait_until(chains_ended, "the chain ends at the failure")
    assert len(asked) == 3, "nothing is asked past the page that failed"


def test_pages_held_ahead_are_kept_as_their_answers_bytes_and_give_the_same_listing(driver):
    """Session 29 (issue 14 goal 4): a page answered while the collection does something
    else is held as the bytes Codex sent (HeldBytes), not as parsed objects, and parsed
    again when taken: the listing is the same."""
    expected = page_by_page(driver)
    stream = stream_source(driver, retain=lambda _summary: True)
    first = next(stream)
    wait_until(chains_ended, "the chain runs to the last page while nothing more is taken")
    held = list(driver.listing._asked.values())
    assert held and all(type(page.pending) is HeldBytes for page in held)
    assert all(type(page.pending.raw) is bytes and len(page.pending.raw) == page.size for page in held)
    rest = listed(stream)
    assert [(first.summary.native_session_id, first.summary.title, first.summary.archived), *rest] == expected

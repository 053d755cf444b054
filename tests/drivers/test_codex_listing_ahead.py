"""The Codex listing asked one page ahead, over the real pinned `codex app-server`.

A collection asks for page N+1 as soon as page N names its cursor, while page N's
sessions are still being taken (and read): Codex serves a request while others are
outstanding and answers each with its own id, in whatever order it finishes them. These
tests show the request goes out that early and that nothing it answers changes: the
same sessions in the same order, each read giving its own thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.reconcile import collect_source, stream_source
from lib.types import AgentSourceConfig
from tests.bench.codex_bench import driver_list_all
from tests.support.codex_home import (
    FixtureThread,
    FixtureTurn,
    demo_threads,
    make_codex_home,
    uuid7_like,
)

WHEN = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
# Enough threads for several pages of two, active and archived.
THREADS = [*demo_threads()] + [
    FixtureThread(
        id=uuid7_like(700 + n, WHEN + timedelta(minutes=n)),
        created_at=WHEN + timedelta(minutes=n),
        turns=(FixtureTurn(id=uuid7_like(800 + n, WHEN), user=f"question {n}", agent=f"answer {n}"),),
    )
    for n in range(5)
]


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return make_codex_home(tmp_path_factory.mktemp("codex-home"), THREADS)


@pytest.fixture(scope="module")
def driver(codex_bin, home) -> Iterator[CodexAppServerDriver]:
    config = AgentSourceConfig(id="codex", driver="codex-app-server", codex_bin=codex_bin, codex_home=str(home))
    driver = CodexAppServerDriver(config, page_size=2)
    try:
        driver.start()
        yield driver
    finally:
        driver.stop()


class BeginSpy:
    """Records each page the stream asks for (the real driver still does the asking)."""

    def __init__(self, driver: CodexAppServerDriver, monkeypatch: pytest.MonkeyPatch) -> None:
        self.cursors: list[str | None] = []
        real = driver.begin_list_sessions

        def begin(cursor: str | None = None):  # noqa: ANN202
            self.cursors.append(cursor)
            return real(cursor)

        monkeypatch.setattr(driver, "begin_list_sessions", begin)


def test_the_next_page_is_asked_for_before_this_pages_first_session_is_taken(driver, monkeypatch):
    spy = BeginSpy(driver, monkeypatch)
    stream = stream_source(driver, retain=lambda _summary: True)
    first = next(stream)
    assert first.kind == "retained"
    assert len(spy.cursors) == 2, "page 1 taken, page 2 already asked for"
    assert spy.cursors[0] is None and spy.cursors[1].startswith("active:")
    rest = list(stream)
    assert stream.outcome.inventory_complete is True
    # every page asked for exactly once, none past the last
    assert len(spy.cursors) == stream.outcome.pages == len(set(spy.cursors))
    assert [first.summary.native_session_id] + [item.summary.native_session_id for item in rest] == (
        driver_list_all(driver)
    )


def test_reads_between_pages_asked_ahead_each_give_their_own_thread_and_the_listing_is_unchanged(driver):
    collected = collect_source(driver)  # every session read while the next page is outstanding
    assert collected.complete is True
    read_ids = [snapshot.summary.native_session_id for snapshot in collected.snapshots]
    assert read_ids == driver_list_all(driver)
    assert len(read_ids) == len(THREADS)
    for snapshot in collected.snapshots:
        assert snapshot.events, "each read carries its own turns"
    by_id = {thread.id: thread for thread in THREADS}
    for snapshot in collected.snapshots:
        assert snapshot.summary.archived == by_id[snapshot.summary.native_session_id].archived


def test_codex_answers_a_read_while_a_page_is_outstanding(driver):
    ids = driver_list_all(driver)
    page = driver.begin_list_sessions(None)  # asked for, not yet taken
    snapshot = driver.read_session(ids[-1])  # answered while the page is outstanding
    assert snapshot.summary.native_session_id == ids[-1]
    assert [summary.native_session_id for summary in page().sessions] == ids[:2]


def test_two_pages_outstanding_at_once_are_each_their_own(driver):
    first = driver.list_sessions(None)
    assert first.next_cursor is not None
    second = driver.list_sessions(first.next_cursor)
    take_first = driver.begin_list_sessions(None)
    take_second = driver.begin_list_sessions(first.next_cursor)
    assert take_second() == second  # taken out of order
    assert take_first() == first


def test_a_page_asked_for_and_never_taken_leaves_the_driver_serving(driver):
    ids = driver_list_all(driver)
    stream = stream_source(driver, retain=lambda _summary: True)
    next(stream)  # page 2 is outstanding now
    stream.close()
    assert stream.outcome.inventory_complete is False
    assert driver_list_all(driver) == ids

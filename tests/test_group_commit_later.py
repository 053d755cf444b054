"""GroupCommit.submit_later (lib/group_commit.py): an item any later commit serves waits
for the batches already waiting and is served by one that holds an item covering it."""

from __future__ import annotations

import threading

import pytest

from lib.group_commit import GroupCommit
from tests.test_group_commit import GUARD, HeldCommits


class _NotedWait(threading.Event):
    """A batch's `begun` event that tells the test when a thread waits on it."""

    def __init__(self, waiting: threading.Event) -> None:
        super().__init__()
        self._waiting = waiting

    def wait(self, timeout: float | None = None) -> bool:
        self._waiting.set()
        return super().wait(timeout)


def _start(target, *args) -> tuple[threading.Thread, dict[str, BaseException | None]]:
    outcome: dict[str, BaseException | None] = {}

    def run() -> None:
        try:
            target(*args)
            outcome["error"] = None
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def _waiting_batch(group: GroupCommit[str], held: HeldCommits, item: str) -> tuple[threading.Thread, threading.Event]:
    """`first` committing (held), `item` waiting in the next batch; returns the thread of
    `item` and an event set once a `submit_later` waits for that batch to begin."""
    first, _ = _start(group.submit, "first")
    assert held.first_started.wait(GUARD)
    waiting, _ = _start(group.submit, item)
    while group.queued() < 1:
        threading.Event().wait(0.005)
    noted = threading.Event()
    group._open.begun = _NotedWait(noted)  # the waiting batch's
    return waiting, noted


def test_a_later_item_covered_by_a_waiting_batch_is_served_by_it_and_never_committed_itself():
    held = HeldCommits()
    group: GroupCommit[str] = GroupCommit(held)
    waiting, noted = _waiting_batch(group, held, "session-a")
    later, outcome = _start(group.submit_later, "session-a again", lambda other: other == "session-a")
    assert noted.wait(GUARD)
    held.release.set()
    for thread in (waiting, later):
        thread.join(GUARD)
    assert outcome == {"error": None}
    assert held.commits == [["first"], ["session-a"]]


def test_a_later_item_no_waiting_batch_covers_is_committed_in_a_batch_of_its_own_after_them():
    held = HeldCommits()
    group: GroupCommit[str] = GroupCommit(held)
    waiting, noted = _waiting_batch(group, held, "session-a")
    later, outcome = _start(group.submit_later, "session-b", lambda other: other == "session-b")
    assert noted.wait(GUARD)
    held.release.set()
    for thread in (waiting, later):
        thread.join(GUARD)
    assert outcome == {"error": None}
    assert held.commits == [["first"], ["session-a"], ["session-b"]]


def test_a_later_item_with_nothing_waiting_commits_at_once_in_the_callers_thread():
    seen: list[tuple[list[str], str]] = []
    group: GroupCommit[str] = GroupCommit(lambda items: seen.append((items, threading.current_thread().name)))
    group.submit_later("a", lambda other: True)
    assert seen == [(["a"], threading.current_thread().name)]


def test_fake_commit_failure_a_later_item_served_by_a_failed_batch_raises_its_error():
    held = HeldCommits(fail_on="session-a")
    group: GroupCommit[str] = GroupCommit(held)
    waiting, noted = _waiting_batch(group, held, "session-a")
    later, outcome = _start(group.submit_later, "session-a again", lambda other: other == "session-a")
    assert noted.wait(GUARD)
    held.release.set()
    for thread in (waiting, later):
        thread.join(GUARD)
    assert isinstance(outcome["error"], RuntimeError)
    assert held.commits == [["first"], ["session-a"]]
    group.submit("after")  # the next commit still runs
    assert held.commits[-1] == ["after"]


@pytest.mark.parametrize("batches", [1, 3])
def test_many_threads_mixing_both_kinds_get_every_item_served(batches: int):
    commits: list[list[tuple[int, int]]] = []
    group: GroupCommit[tuple[int, int]] = GroupCommit(lambda items: (commits.append(items), threading.Event().wait(0.001)))

    def submit_many(thread: int) -> None:
        for n in range(50):
            if n % 2:
                group.submit_later((thread, n), lambda other: False, batches=batches)
            else:
                group.submit((thread, n))

    threads = [threading.Thread(target=submit_many, args=(t,)) for t in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(GUARD)
    committed = [item for items in commits for item in items]
    assert sorted(committed) == [(t, n) for t in range(16) for n in range(50)]

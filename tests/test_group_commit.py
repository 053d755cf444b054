"""GroupCommit (lib/group_commit.py): items arriving during a commit share the next one."""

from __future__ import annotations

import threading

import pytest

from lib.group_commit import GroupCommit

GUARD = 30


class HeldCommits:
    """Records each commit's items; the first commit waits until released."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.commits: list[list[str]] = []
        self.first_started = threading.Event()
        self.release = threading.Event()
        self.fail_on = fail_on

    def __call__(self, items: list[str]) -> None:
        self.commits.append(items)
        if len(self.commits) == 1:
            self.first_started.set()
            assert self.release.wait(GUARD)
        if self.fail_on in items:
            raise RuntimeError(f"commit of {items} failed")


def run_all(group: GroupCommit[str], held: HeldCommits, later: list[str]) -> dict[str, BaseException | None]:
    outcome: dict[str, BaseException | None] = {}

    def submit(item: str) -> None:
        try:
            group.submit(item)
            outcome[item] = None
        except BaseException as exc:
            outcome[item] = exc

    first = threading.Thread(target=submit, args=("first",))
    first.start()
    assert held.first_started.wait(GUARD)
    others = [threading.Thread(target=submit, args=(item,)) for item in later]
    for thread in others:
        thread.start()
    while group.queued() < len(later):
        threading.Event().wait(0.005)
    held.release.set()
    for thread in [first, *others]:
        thread.join(GUARD)
    return outcome


def test_items_arriving_during_a_commit_go_together_into_the_next_one():
    held = HeldCommits()
    outcome = run_all(GroupCommit(held), held, ["a", "b", "c"])
    assert held.commits[0] == ["first"]
    assert sorted(held.commits[1]) == ["a", "b", "c"] and len(held.commits) == 2
    assert outcome == {"first": None, "a": None, "b": None, "c": None}


def test_a_failed_commit_fails_its_own_items_and_not_the_next_ones():
    held = HeldCommits(fail_on="b")
    group: GroupCommit[str] = GroupCommit(held)
    outcome = run_all(group, held, ["a", "b"])
    assert outcome["first"] is None
    assert isinstance(outcome["a"], RuntimeError) and outcome["a"] is outcome["b"]
    group.submit("after")  # the next commit runs
    assert held.commits[-1] == ["after"]


def test_a_lone_item_commits_at_once_in_the_callers_thread():
    seen: list[tuple[list[int], str]] = []
    group: GroupCommit[int] = GroupCommit(lambda items: seen.append((items, threading.current_thread().name)))
    group.submit(1)
    group.submit(2)
    assert seen == [([1], threading.current_thread().name), ([2], threading.current_thread().name)]


def test_an_error_reaches_the_caller_with_its_type():
    group: GroupCommit[int] = GroupCommit(lambda items: (_ for _ in ()).throw(ValueError("no")))
    with pytest.raises(ValueError, match="no"):
        group.submit(1)


def test_many_threads_get_every_item_committed_exactly_once_and_in_fewer_commits():
    commits: list[list[tuple[int, int]]] = []
    group: GroupCommit[tuple[int, int]] = GroupCommit(lambda items: (commits.append(items), threading.Event().wait(0.001)))

    def submit_many(thread: int) -> None:
        for n in range(50):
            group.submit((thread, n))

    threads = [threading.Thread(target=submit_many, args=(t,)) for t in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(GUARD)
    committed = [item for items in commits for item in items]
    assert sorted(committed) == [(t, n) for t in range(16) for n in range(50)]
    assert len(commits) < len(committed)

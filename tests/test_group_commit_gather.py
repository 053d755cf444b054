"""GroupCommit's gathering (lib/group_commit.py, GATHER_SECONDS): a leader whose batch
holds fewer items than the last commit did waits a moment for more, so a batch does not
shrink for a moment's scheduling; a lone caller never waits."""

from __future__ import annotations

import threading

from lib.group_commit import GroupCommit
from tests.test_group_commit import GUARD, HeldCommits, run_all


def test_a_leader_waits_for_as_many_items_as_the_last_commit_held():
    """After a commit of three, the next leader's batch takes the two items submitted
    after it began to lead (the gather is long: only the items' arrival ends it)."""
    held = HeldCommits()
    group: GroupCommit[str] = GroupCommit(held, gather=GUARD)
    run_all(group, held, ["a", "b", "c"])
    assert [len(items) for items in held.commits] == [1, 3]
    threads = [threading.Thread(target=group.submit, args=("x",))]
    threads[0].start()
    while not group.queued() and len(held.commits) < 3:  # x leads, and waits for two more
        threading.Event().wait(0.005)
    for item in ("y", "z"):
        threads.append(threading.Thread(target=group.submit, args=(item,)))
        threads[-1].start()
    for thread in threads:
        thread.join(GUARD)
    assert held.commits[2] == ["x", "y", "z"] and len(held.commits) == 3


def test_a_lone_caller_never_waits_to_gather():
    """One item at a time: each commit held one, so the next leader commits at once
    (with an hour's gather, a wait would not end within the guard)."""
    commits: list[list[int]] = []
    group: GroupCommit[int] = GroupCommit(commits.append, gather=3600)
    done = threading.Thread(target=lambda: [group.submit(n) for n in range(5)])
    done.start()
    done.join(GUARD)
    assert not done.is_alive() and commits == [[0], [1], [2], [3], [4]]


def test_a_gathering_leader_commits_what_it_has_when_the_gather_ends():
    held = HeldCommits()
    group: GroupCommit[str] = GroupCommit(held, gather=0.01)
    run_all(group, held, ["a", "b", "c"])
    group.submit("alone")  # nobody else comes: committed after the gather
    assert held.commits[-1] == ["alone"] and group.commits == 3 and group.committed == 5

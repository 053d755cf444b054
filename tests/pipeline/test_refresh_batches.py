"""Coalesced refreshes: requests that arrive while a refresh publishes go together into
the next publication, and every caller returns only once its own session is published."""

from __future__ import annotations

import threading
from pathlib import Path

from lib.pipeline.refresh import refresh_sessions
from lib.pipeline.refresh_batches import RefreshBatches
from tests.fabric.target_helpers import make_env, rows, snapshot
from tests.support.scripted_driver import ScriptedDriver

GUARD = 60


def _driver(*ids: str) -> ScriptedDriver:
    return ScriptedDriver(source_id="codex", kind="codex-app-server", snapshots=[snapshot(i) for i in ids])


def test_refresh_sessions_publishes_several_sessions_in_one_index_commit(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    driver = _driver("a", "b", "c")
    commits = []
    original = target.publication

    def counting(**options):
        publication = original(**options)
        commit = publication.commit
        publication.commit = lambda: commits.append(1) or commit()
        return publication

    target.publication = counting
    outcomes = refresh_sessions(target, [(driver, "a"), (driver, "b"), (driver, "c")])
    assert [o.action for o in outcomes] == ["written"] * 3
    assert set(rows(target)) == {"codex/a", "codex/b", "codex/c"}
    assert len(commits) == 1


def test_requests_arriving_while_a_refresh_runs_share_the_next_publication(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    driver = _driver("a", "b", "c")
    batches = RefreshBatches()
    held = driver.gate("read", "a")
    publications = []
    original = target.publication

    def counting(**options):
        publications.append(options)
        return original(**options)

    target.publication = counting  # count the index commits the batches make
    errors: list[BaseException] = []

    def refresh(sid: str) -> None:
        try:
            batches.refresh(target, driver, sid)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    first = threading.Thread(target=refresh, args=("a",))
    first.start()
    held.wait_reached()  # the first batch is reading "a"
    others = [threading.Thread(target=refresh, args=(sid,)) for sid in ("b", "c", "b")]
    for thread in others:
        thread.start()
    # b, c and b again are all pending behind the running batch before it ends
    deadline = threading.Event()
    while batches._targets[id(target)].queued() < 3 and not deadline.wait(0.01):
        pass
    held.open()
    for thread in [first, *others]:
        thread.join(GUARD)
    assert not errors
    assert len(publications) == 2  # one for "a", one for b and c together
    assert [call[1] for call in driver.calls_of("read")] == ["a", "b", "c"]  # b read once
    assert set(rows(target)) == {"codex/a", "codex/b", "codex/c"}


def test_fake_publication_failure_a_failed_batch_raises_in_every_caller_and_the_next_batch_still_runs(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    driver = _driver("a")
    batches = RefreshBatches()
    original = target.publication
    failing = {"on": True}

    def sometimes_failing(**options):
        if failing["on"]:
            raise RuntimeError("store down")
        return original(**options)

    target.publication = sometimes_failing
    try:
        batches.refresh(target, driver, "a")
    except RuntimeError as exc:
        assert str(exc) == "store down"
    else:
        raise AssertionError("the failed publication was not raised")
    failing["on"] = False
    batches.refresh(target, driver, "a")
    assert set(rows(target)) == {"codex/a"}

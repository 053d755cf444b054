"""Preparations kept between refreshes (lib/pipeline/prepared_reads.py): a session read
again unchanged is not prepared again, and what is published is what preparing gives."""

from __future__ import annotations

from pathlib import Path

import pytest

import lib.pipeline.refresh as refresh_module
from lib.pipeline.prepared_reads import PreparedReads
from lib.pipeline.refresh import refresh_sessions
from lib.prepare import prepare_session
from tests.fabric.target_helpers import make_env, rows, snapshot
from tests.support.scripted_driver import ScriptedDriver


def _driver(*ids: str, messages: int = 2) -> ScriptedDriver:
    return ScriptedDriver(source_id="codex", kind="codex-app-server",
                          snapshots=[snapshot(i, messages=messages) for i in ids])


@pytest.fixture
def prepares(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sessions `refresh_sessions` prepares, in order."""
    seen: list[str] = []

    def counting(source_id, snap, *args, **kwargs):
        seen.append(snap.summary.native_session_id)
        return prepare_session(source_id, snap, *args, **kwargs)

    monkeypatch.setattr(refresh_module, "prepare_session", counting)
    return seen


def test_a_digest_tells_apart_what_a_json_dump_does_not():
    same, other = snapshot("a"), snapshot("a")
    assert PreparedReads.digest(same) == PreparedReads.digest(other)
    nan, null = snapshot("a"), snapshot("a")
    nan.events[0]["x"], null.events[0]["x"] = float("nan"), None
    assert nan.model_dump_json() == null.model_dump_json()  # what a JSON dump would confuse
    assert PreparedReads.digest(nan) != PreparedReads.digest(null)
    one, one_float = snapshot("a"), snapshot("a")
    one.events[0]["n"], one_float.events[0]["n"] = 1, 1.0
    assert PreparedReads.digest(one) != PreparedReads.digest(one_float)


def test_an_unchanged_session_is_prepared_once_and_published_as_without_kept_preparations(
    tmp_path: Path, prepares: list[str]
) -> None:
    kept_env, plain_env = make_env(tmp_path / "kept"), make_env(tmp_path / "plain")
    kept_target, plain_target = kept_env.target(), plain_env.target()
    kept = PreparedReads()
    driver = _driver("a", "b")
    for _ in range(3):
        kept_outcomes = refresh_sessions(kept_target, [(driver, "a"), (driver, "b")], kept=kept)
    assert prepares == ["a", "b"]  # the second and third reads reuse the first preparation
    for _ in range(3):
        plain_outcomes = refresh_sessions(plain_target, [(driver, "a"), (driver, "b")])
    assert [o.action for o in kept_outcomes] == [o.action for o in plain_outcomes] == ["unchanged"] * 2
    def without_links(target):  # the two stores' owners differ, so do their manifests' cells
        return {key: {k: v for k, v in row.items() if k not in {"manifest", "manifestHash"}}
                for key, row in rows(target).items()}

    assert without_links(kept_target) == without_links(plain_target)


def test_a_changed_session_is_prepared_again(tmp_path: Path, prepares: list[str]) -> None:
    target = make_env(tmp_path).target()
    kept = PreparedReads()
    driver = _driver("a")
    refresh_sessions(target, [(driver, "a")], kept=kept)
    driver.snapshots["a"].events.append({"type": "user", "id": "a-new", "text": "more"})
    (outcome,) = refresh_sessions(target, [(driver, "a")], kept=kept)
    assert prepares == ["a", "a"] and outcome.action == "written"
    refresh_sessions(target, [(driver, "a")], kept=kept)
    assert prepares == ["a", "a"]  # the new state is kept in its turn


def test_a_kept_preparation_the_index_row_no_longer_carries_is_not_used(tmp_path: Path, prepares: list[str]) -> None:
    target = make_env(tmp_path).target()
    kept = PreparedReads()
    driver = _driver("a")
    refresh_sessions(target, [(driver, "a")], kept=kept)
    # another publisher (here: a refresh without kept preparations) publishes another state
    original = driver.snapshots["a"].model_copy(deep=True)
    driver.snapshots["a"].events.append({"type": "user", "id": "a-new", "text": "more"})
    refresh_sessions(target, [(driver, "a")])
    driver.snapshots["a"] = original  # back to the state kept above
    (outcome,) = refresh_sessions(target, [(driver, "a")], kept=kept)
    # the row carries the other state's hash: the kept preparation (no chunks) cannot
    # write the graph, so the snapshot is prepared again and written
    assert outcome.action == "written" and prepares == ["a", "a", "a"]
    assert rows(target)["codex/a"]["snapshotHash"] == prepare_session("codex", original, driver="codex-app-server").snapshot_hash


def test_large_sessions_are_not_kept_and_the_least_recently_used_go_first():
    kept = PreparedReads(capacity=2, max_bytes=2_000)
    small = {sid: prepare_session("codex", snapshot(sid), driver="d") for sid in ("a", "b", "c")}
    for sid, prepared in small.items():
        kept.put(prepared.key, sid.encode(), prepared)
    assert kept.get(small["a"].key, b"a") is None  # dropped for c
    assert kept.get(small["b"].key, b"b").snapshot_hash == small["b"].snapshot_hash
    assert kept.get(small["b"].key, b"other") is None
    assert kept.get(small["b"].key, b"b").chunks == ()  # kept without its chunks
    large = prepare_session("codex", snapshot("c", messages=200), driver="d")
    kept.put(large.key, b"c", large)
    assert kept.get(large.key, b"c") is None  # too large: and what was kept for it is gone

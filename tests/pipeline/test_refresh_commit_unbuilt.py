"""A refresh that changes nothing a reader sees commits the ordering without building
either index root (index_roots.index_unchanged, session 24), and leaves the store as
building them would: every stored cell, value and sequence alike, step by step, against
the same refreshes with that shortcut turned off (the full build then decides, as
before session 24), through unchanged refreshes, a row aging out of the recent window,
a changed descriptor, a changed session and a failed read. The recent window holds
exactly while the same rows are recent, and a row the prior commit timed (the same
object) is not read for its time again."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import lib.fabric.publication as publication
from lib.fabric.index_store import IndexCells
from lib.fabric.packed_rows import packed
from lib.fabric.session_index import RecentWindow, index_values
from lib.pipeline.refresh import refresh_session
from tests.fabric.target_helpers import SPACE, START, Env, changed_since, index, make_env, snapshot
from tests.support.scripted_driver import ScriptedDriver


def _stored(env: Env) -> dict[str, Any]:
    """Every cell of the space: its sequence and value."""
    return {cell: (seq, env.store.read(SPACE, cell).value) for cell, seq in env.store.changes_since(SPACE, 0)}


def _driver() -> ScriptedDriver:
    return ScriptedDriver(source_id="codex", kind="codex-app-server", snapshots=[
        snapshot("a", updated_at=START), snapshot("b", updated_at=START - timedelta(days=6)),
        snapshot("c", updated_at=START - timedelta(days=30)),
    ])


def _steps(env: Env, driver: ScriptedDriver) -> tuple[list[tuple[str, set[str]]], list[dict[str, Any]]]:
    """The refreshes, each with the cells it wrote; the store after each."""
    target = env.target()
    done: list[tuple[str, set[str]]] = []
    stored: list[dict[str, Any]] = []

    def step(name: str, session: str) -> None:
        before = max(seq for _, seq in env.store.changes_since(SPACE, 0)) if done else 0
        outcome = refresh_session(target, driver, session)
        done.append((f"{name}: {outcome.action}", changed_since(env.store, before)))
        stored.append(_stored(env))

    for session in ("a", "b", "c"):
        step("first", session)
    step("unchanged", "a")
    step("unchanged again", "b")
    env.clock.advance(hours=23)
    step("a day later, b still recent", "a")
    env.clock.advance(hours=2)
    step("b aged out of the window", "a")
    step("unchanged after the window moved", "c")
    driver.source.capabilities = driver.source.capabilities.model_copy(update={"cancel": False})
    step("other capabilities", "a")
    driver.snapshots["a"] = snapshot("a", messages=4, updated_at=START + timedelta(days=1))
    step("a changed", "a")
    step("unchanged after a change", "a")
    driver.read_faults["b"] = RuntimeError("gone")
    step("b failed", "b")
    step("b failed again", "b")
    return done, stored


def _env(tmp_path: Path, name: str, identity: Path | None) -> Env:
    folder = tmp_path / name
    folder.mkdir()
    if identity is not None:
        shutil.copy(identity, folder / "identity")
    return make_env(folder)


def test_a_refresh_commits_what_the_full_build_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shortcut = _env(tmp_path, "shortcut", None)
    shortcut_steps, shortcut_stored = _steps(shortcut, _driver())
    built = _env(tmp_path, "built", tmp_path / "shortcut" / "identity")
    with monkeypatch.context() as patch:
        patch.setattr(publication, "index_unchanged", lambda *args: False)  # the full build decides
        built_steps, built_stored = _steps(built, _driver())

    assert shortcut_steps == built_steps
    for step, mine, theirs in zip(shortcut_steps, shortcut_stored, built_stored, strict=True):
        assert mine == theirs, step
    ordering = IndexCells.of(SPACE, shortcut.owner).ordering
    only_ordering = [name for name, cells in shortcut_steps if cells == {ordering}]
    assert len(only_ordering) >= 5, shortcut_steps  # the shortcut's cases were there
    assert any(name.startswith("b aged out") and len(cells) > 1 for name, cells in shortcut_steps)
    assert index(shortcut.target())["olderSessionCount"] == 2


def test_the_recent_window_holds_exactly_while_the_same_rows_are_recent() -> None:
    now = datetime(2026, 7, 1, tzinfo=UTC)
    rows = [{"key": f"k{n}", "status": "deleted" if n == 3 else "complete",
             "updatedAt": (now - timedelta(hours=n * 37)).isoformat()} for n in range(9)]
    rows.append({"key": "untimed", "status": "complete"})
    _recent, _complete, window = index_values(
        owner_did="did:x", generated_at=now, generation=1, sessions=rows, sources=[], checkouts=[])

    def recent_keys(at: datetime) -> list[str]:
        value, _, _ = index_values(owner_did="did:x", generated_at=at, generation=1, sessions=rows, sources=[],
                                   checkouts=[])
        return [r["key"] for r in value["sessions"]]

    for minutes in range(-3000, 3000, 7):
        at = now + timedelta(minutes=minutes)
        assert window.holds(at) == (recent_keys(at) == recent_keys(now)), at
    assert RecentWindow(None, None).holds(now)


def test_a_kept_row_takes_its_time_from_the_prior_window_and_a_new_one_is_read() -> None:
    now = datetime(2026, 7, 1, tzinfo=UTC)
    rows = [packed({"key": f"k{n}", "status": "complete", "updatedAt": (now - timedelta(days=n)).isoformat()})
            for n in range(3)]
    values = index_values(owner_did="did:x", generated_at=now, generation=1, sessions=rows, sources=[],
                          checkouts=[])
    assert set(values[2].times) == {"k0", "k1", "k2"}
    assert [r["key"] for r in values[1]["sessions"]] == ["k0", "k1", "k2"]
    # the window says k2 (this very object) is newest: its time is not read again
    later = int((now + timedelta(days=1)).timestamp()) * 10**6  # row_micros: whole microseconds
    known = RecentWindow(None, None, {**values[2].times, "k2": (rows[2], later)})
    kept = index_values(owner_did="did:x", generated_at=now, generation=2, sessions=rows, sources=[],
                        checkouts=[], known=known)
    assert [r["key"] for r in kept[1]["sessions"]] == ["k2", "k0", "k1"]
    fresh = [*rows[:2], packed(dict(rows[2].plain()))]  # an equal row, another object: read
    read = index_values(owner_did="did:x", generated_at=now, generation=2, sessions=fresh, sources=[],
                        checkouts=[], known=known)
    assert [r["key"] for r in read[1]["sessions"]] == ["k0", "k1", "k2"]

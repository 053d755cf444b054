"""A refreshed index row compared with its prior row by parts (issue 10, `same_rows`):
the answer is the whole-row value hash's, a changed field is found without reading the
prior row's previews back, and a prior row's stored previews are read back once, not
on every refresh that compares with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lib.fabric import same_rows
from lib.fabric.index_store import IndexCells, read_prior
from lib.fabric.packed_previews import PackedPreviews, StoredPreviews, packed_row
from lib.fabric.packed_rows import PackedRow
from lib.fabric.same_rows import same_row
from lib.hashing import value_hash
from tests.fabric.target_helpers import descriptor, make_env, publish, snapshot


def _prior_rows(tmp_path: Path) -> dict[str, PackedRow]:
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot("a", messages=3), snapshot("b", messages=2)])
    prior = read_prior(target.graphs, IndexCells.of(target.space, target.owner))
    assert all(isinstance(r["recentMessages"], StoredPreviews) for r in prior.rows.values())
    return prior.rows  # type: ignore[return-value]


def _fresh(prior: PackedRow, **changes: Any) -> PackedRow:
    """A new row of the same values as `prior` (its previews packed from a plain list,
    as a refresh makes them), with `changes`."""
    plain = prior.plain()
    plain["recentMessages"] = plain["recentMessages"].unpack()
    return PackedRow(packed_row({**plain, **changes}))


def _whole_hash_says(row: PackedRow, prior: PackedRow) -> bool:
    return value_hash(row) == value_hash(prior)


def test_a_refreshed_row_equal_to_its_stored_prior_row_is_the_same(tmp_path: Path):
    prior = _prior_rows(tmp_path)["codex/a"]
    row = _fresh(prior)
    assert _whole_hash_says(row, prior)
    assert same_row(row, prior)


def test_a_changed_field_or_changed_previews_is_a_different_row(tmp_path: Path):
    prior = _prior_rows(tmp_path)["codex/a"]
    messages = prior["recentMessages"].unpack()
    for row in (
        _fresh(prior, title="renamed"),
        _fresh(prior, recentMessages=messages[:-1]),
        _fresh(prior, recentMessages=[*messages[:-1], {**messages[-1], "text": "other"}]),
    ):
        assert not _whole_hash_says(row, prior)
        assert not same_row(row, prior)


def test_a_changed_field_is_found_without_reading_the_stored_previews(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    prior = _prior_rows(tmp_path)["codex/a"]
    row = _fresh(prior, status="partial")
    reads: list[StoredPreviews] = []
    real = StoredPreviews.unpack
    monkeypatch.setattr(StoredPreviews, "unpack", lambda self: reads.append(self) or real(self))
    assert not same_row(row, prior)
    assert reads == []


def test_stored_previews_are_read_back_once_for_many_refreshes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    prior = _prior_rows(tmp_path)["codex/b"]
    reads: list[StoredPreviews] = []
    real = StoredPreviews.unpack
    monkeypatch.setattr(StoredPreviews, "unpack", lambda self: reads.append(self) or real(self))
    fresh = [_fresh(prior) for _ in range(3)]  # reads the previews to build the rows
    reads.clear()
    assert all(same_row(row, prior) for row in fresh)
    assert reads == [prior["recentMessages"]]
    # another stand-in of the same cell (a prior read from the store again) is read anew
    again = prior.with_previews(StoredPreviews(*_stand_in_parts(prior["recentMessages"])))
    assert same_row(fresh[0], again)
    assert len(reads) == 2


def _stand_in_parts(previews: StoredPreviews) -> tuple[Any, str, str]:
    return previews._store, previews._space, previews._cell


def test_values_python_calls_equal_but_fabric_does_not_are_different_rows():
    base = {"key": "codex/a", "status": "complete", "recentMessages": PackedPreviews([{"n": 1}])}
    for field, one, other in (("count", 1, True), ("count", 1, 1.5), ("title", "a", None)):
        row, prior = {**base, field: one}, {**base, field: other}
        assert same_row(row, prior) is (value_hash(row) == value_hash(prior))
    assert not same_row({**base, "n": 1}, {**base, "n": True})
    assert not same_row(base, {**base, "recentMessages": PackedPreviews([{"n": True}])})
    assert same_row(base, {**base, "recentMessages": [{"n": 1}]})


def test_the_stored_hashes_stay_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(same_rows, "_STORED_HASHES_LIMIT", 2)
    monkeypatch.setattr(same_rows, "_STORED_HASHES", {})
    prior = _prior_rows(tmp_path)["codex/a"]
    row = _fresh(prior)
    parts = _stand_in_parts(prior["recentMessages"])
    for _ in range(5):
        assert same_row(row, prior.with_previews(StoredPreviews(*parts)))
    assert len(same_rows._STORED_HASHES) <= 2

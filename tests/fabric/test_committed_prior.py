"""The index a process last committed stands in for reading it back: after every kind of
publication, what `read_prior` returns from that memory equals what it reads from the
store; and once another writer moves the index, the store is read again."""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path

import pytest

from lib.fabric import root_links
from lib.fabric.committed_prior import CommittedRows
from lib.fabric.index_roots import root_digest
from lib.fabric.index_store import PriorIndex, read_prior
from lib.fabric.packed_rows import PackedRow
from lib.git_context import GitContextResolver
from tests.fabric.target_helpers import descriptor, make_env, publish, snapshot
from tests.support.git_repos import GitRepos


def _same(target) -> None:  # noqa: ANN001
    remembered = read_prior(target.graphs, target.cells)
    assert target.graphs.committed  # the memory was used
    saved = dict(target.graphs.committed)
    target.graphs.committed.clear()
    read_back = read_prior(target.graphs, target.cells)
    target.graphs.committed.update(saved)
    for field in dataclasses.fields(PriorIndex):
        if field.compare:
            assert getattr(remembered, field.name) == getattr(read_back, field.name), field.name
    for cell, digest in remembered.roots.items():  # the roots it remembers are the stored ones
        assert root_digest(target.store.read(target.space, cell).value, target.space) == digest


def test_the_remembered_index_equals_the_stored_one_after_every_kind_of_publication(tmp_path: Path) -> None:
    repos = GitRepos(tmp_path / "git")
    repo = repos.init("project", branch="main")
    target = make_env(tmp_path, GitContextResolver(repos.runner())).target()
    source = descriptor()
    publish(target, source, [snapshot("a"), snapshot("b", cwd=str(repo)), snapshot("c")],
            checkout_directories=[str(repo)])
    _same(target)
    publish(target, source, [snapshot("a", messages=3)], listed=["a", "b"])  # c deleted
    _same(target)
    publish(target, source, [snapshot("a")], read_errors=["b"], inventory_complete=False)  # b partial
    _same(target)
    publish(target, descriptor("other"), [snapshot("x")], preserve=True)
    _same(target)
    prior = read_prior(target.graphs, target.cells)  # the cases above were all there
    assert {row["status"] for row in prior.rows.values()} >= {"complete", "deleted", "partial"}
    assert prior.checkouts and len(prior.sources) == 2


def test_another_writers_commit_makes_the_next_publication_read_the_store(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    mine, theirs = env.target(), env.target()
    publish(mine, descriptor(), [snapshot("a")])
    publish(theirs, descriptor(), [snapshot("a"), snapshot("b")])  # mine's memory is stale now
    prior = read_prior(mine.graphs, mine.cells)
    assert set(prior.rows) == {"codex/a", "codex/b"}


def test_a_commit_over_a_prior_table_keeps_its_rows_as_places_until_they_are_read(tmp_path: Path) -> None:
    """Session 28: the rows of a prior read from the store (prior_table.PriorRows) are
    kept after the commit as their places in that table, no row object each, and made
    when the next publication reads them: the same rows the store gives back."""
    target = make_env(tmp_path).target()
    source = descriptor()
    publish(target, source, [snapshot(n) for n in "abcdef"])
    target.graphs.committed.clear()  # the next publication reads its prior from the store: a table
    publish(target, source, [snapshot("a", messages=3)], retained=[snapshot(n).summary for n in "bcdef"])
    committed = target.graphs.committed[target.cells.all]
    kept = committed.pending.__closure__  # make()'s cells: the kept rows and links
    rows = next(c.cell_contents for c in kept if type(c.cell_contents) is CommittedRows)
    assert rows.table is not None and len(rows.others) == 1 and len(rows) == 6  # "a" was read again
    assert not [r for r in gc.get_referents(rows) if isinstance(r, PackedRow)]
    _same(target)


def test_the_committed_roots_links_wait_in_a_file_and_the_next_publication_reads_them_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Session 30: a root's links beyond SPILL_BYTES wait in a private temporary file
    (root_links.RootLinks), not memory, through the commit and after it; the prior this
    process remembers reads them back, and equals the stored one (here every link waits)."""
    monkeypatch.setattr(root_links, "SPILL_BYTES", 0)
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot(name) for name in ("a", "b", "c")])
    remembered = next(iter(target.graphs.committed.values()))
    assert remembered.pending is not None  # its rows and links not made yet
    spilled = remembered.pending.__closure__  # the links the committed prior keeps
    held = [cell.cell_contents for cell in spilled if type(cell.cell_contents) is root_links.RootLinks]
    assert held and all(links._spilled is not None and not links._bodies for links in held)
    _same(target)  # read back: the same prior as the store's
    publish(target, descriptor(), [snapshot("a", messages=3), snapshot("d")], listed=["a", "b", "c", "d"])
    _same(target)
    assert set(read_prior(target.graphs, target.cells).rows) == {f"codex/{n}" for n in "abcd"}

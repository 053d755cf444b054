"""The index a process last committed stands in for reading it back: after every kind of
publication, what `read_prior` returns from that memory equals what it reads from the
store; and once another writer moves the index, the store is read again."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from lib.fabric.index_roots import root_digest
from lib.fabric.index_store import PriorIndex, read_prior
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

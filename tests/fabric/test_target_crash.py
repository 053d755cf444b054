"""A publication that dies among its session graphs leaves the prior indexes pointing at
complete manifests, and the next publication completes the work."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import lib.fabric.graph_batch as graph_batch
from lib.fabric.schemas import parse_chunk, parse_manifest
from lib.fabric.target import FabricTarget
from lib.fabric.values import Link
from tests.fabric.target_helpers import (
    descriptor,
    hydrate,
    index,
    make_env,
    publish,
    rows,
    snapshot,
)

GUARD = 120.0
REPO = Path(__file__).resolve().parents[2]


def _assert_every_indexed_manifest_is_complete(target: FabricTarget) -> dict[str, int]:
    """Hydrate every manifest the complete index links; returns message counts by key."""
    counts = {}
    for key, row in rows(target).items():
        manifest = parse_manifest(hydrate(target, row["manifest"].id))
        assert manifest["snapshotHash"] == row["snapshotHash"]
        for descriptor_ in manifest["chunks"]:
            chunk = parse_chunk(descriptor_["chunk"])
            assert len(chunk["events"]) == descriptor_["eventCount"]
        counts[key] = len(manifest["normalized"]["messages"])
    return counts


def _assert_no_document_links_a_missing_cell(target: FabricTarget) -> int:
    """Every link in every stored document of the space names a cell holding a value;
    returns how many links were checked."""
    store, space = target.store, target.space
    ids = [cell for cell, _ in store.changes_since(space, 0)]
    live = store.existing(space, ids)
    checked = 0
    for _cell, document in store.iter_many(space, ids):
        stack = [document.value]
        while stack:
            value = stack.pop()
            if isinstance(value, Link):
                if value.space == space:
                    assert value.id in live, f"a document links the missing cell {value.id}"
                    checked += 1
            elif isinstance(value, dict):
                stack.extend(value.values())
            elif isinstance(value, list | tuple):
                stack.extend(value)
    return checked


def _integrity(tmp_path: Path) -> str:
    conn = sqlite3.connect(tmp_path / "fabric.db")
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


class FakeFault(Exception):
    pass


def test_a_fake_fault_in_a_batch_commit_keeps_the_prior_indexes_whole_and_the_next_run_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make_env(tmp_path)
    target = env.target()
    names = [f"s{i}" for i in range(5)]
    publish(target, descriptor(), [snapshot(n, messages=2) for n in names])
    generation = index(target)["generation"]
    changed = [snapshot(n, messages=4) for n in names]

    monkeypatch.setattr(graph_batch, "MAX_SESSIONS", 2)
    real_commit = graph_batch.GraphBatch._commit_sealed  # each batch's one commit
    flushes = []

    def commit_the_first_batch_then_fail(batch):
        if batch._sealed is None:
            return
        if len(flushes) == 1:
            raise FakeFault("the process dies here")
        flushes.append(set(batch._sealed.roots))
        real_commit(batch)

    monkeypatch.setattr(graph_batch.GraphBatch, "_commit_sealed", commit_the_first_batch_then_fail)
    with pytest.raises(FakeFault):
        publish(target, descriptor(), changed)
    monkeypatch.undo()

    assert len(flushes[0]) >= 2  # two sessions' graphs were committed together
    assert index(target)["generation"] == generation
    assert _assert_every_indexed_manifest_is_complete(target) == {f"codex/{n}": 2 for n in names}
    assert not flushes[0] & {r["manifest"].id for r in rows(target).values()}
    assert _assert_no_document_links_a_missing_cell(target) > 0

    summary, results = publish(target, descriptor(), changed)

    assert [r.action for r in results] == ["written"] * 5
    assert summary.generation == generation + 1
    assert _assert_every_indexed_manifest_is_complete(target) == {f"codex/{n}": 4 for n in names}


_CHILD = """
import sys
from pathlib import Path
import lib.fabric.graph_batch as graph_batch
from tests.fabric.target_helpers import descriptor, make_env, prepared, outcome, snapshot

graph_batch.MAX_SESSIONS = int(sys.argv[3])
env = make_env(Path(sys.argv[1]))
target = env.target()
source = descriptor()
names = [f"s{i}" for i in range(int(sys.argv[2]))]
with target.publication() as pub:
    pub.begin_source(source, None)
    for n, name in enumerate(names):
        pub.add_prepared(prepared(source, snapshot(name, messages=500, text="changed " * 20), target_chunk_bytes=32 * 1024))
        print("published", n + 1, flush=True)
    pub.end_source(outcome("codex", names))
    pub.commit()
print("committed", flush=True)
"""


def _killed_after_two_batches(tmp_path: Path, count: int) -> None:
    """_CHILD publishing `count` sessions into tmp_path's store, three a batch, killed
    with SIGKILL once two batches are committed and a third is staged."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path), str(count), "3"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    for _ in range(7):
        assert child.stdout.readline().startswith("published")
    os.kill(child.pid, signal.SIGKILL)
    child.wait(GUARD)
    assert child.returncode == -signal.SIGKILL


def test_a_publisher_killed_with_sigkill_among_its_session_graphs_leaves_the_prior_indexes_whole(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    target = env.target()
    count = 24
    names = [f"s{i}" for i in range(count)]
    publish(target, descriptor(), [snapshot(n, messages=3) for n in names])
    generation = index(target)["generation"]

    _killed_after_two_batches(tmp_path, count)

    assert index(target)["generation"] == generation
    assert _assert_every_indexed_manifest_is_complete(target) == {f"codex/{n}": 3 for n in names}
    assert _integrity(tmp_path) == "ok"
    assert _assert_no_document_links_a_missing_cell(target) > 0

    # the next run (taking the publish lock the dead process held) completes the work
    summary, _ = publish(
        target, descriptor(), [snapshot(n, messages=500, text="changed " * 20) for n in names]
    )
    assert summary.generation == generation + 1
    assert _assert_every_indexed_manifest_is_complete(target) == {f"codex/{n}": 500 for n in names}


def test_a_first_publisher_killed_among_its_session_graphs_leaves_a_store_the_next_open_repairs(
    tmp_path: Path,
) -> None:
    """A first run into an empty store writes its batches without the key index
    (sqlite_key_index.py); killed among them, it leaves the file without that index and
    with no index root. The next handle to open the file builds the index before it reads
    or writes, and the next publication completes the work."""
    count = 24
    names = [f"s{i}" for i in range(count)]
    _killed_after_two_batches(tmp_path, count)

    def key_index() -> list[tuple[str]]:
        conn = sqlite3.connect(tmp_path / "fabric.db")
        try:
            return conn.execute("SELECT name FROM sqlite_master WHERE name = 'documents_by_cell'").fetchall()
        finally:
            conn.close()

    assert key_index() == []  # the dead run's rows, without their key index
    env = make_env(tmp_path)
    target = env.target()
    assert key_index() == [("documents_by_cell",)]
    assert _integrity(tmp_path) == "ok"
    assert index(target)["sessions"] == [] and index(target)["generation"] == 0  # nothing was published
    assert _assert_no_document_links_a_missing_cell(target) > 0

    summary, _ = publish(target, descriptor(), [snapshot(n, messages=500, text="changed " * 20) for n in names])
    assert summary.generation == 1 and len(rows(target)) == count
    assert _assert_every_indexed_manifest_is_complete(target) == {f"codex/{n}": 500 for n in names}
    assert _integrity(tmp_path) == "ok"

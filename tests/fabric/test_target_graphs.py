"""Session graphs: chunks before manifests, indexes after graphs, unchanged graphs kept."""

from __future__ import annotations

from pathlib import Path

from lib.fabric.cell_id import cell_id, session_chunk_cause
from lib.fabric.ordering import ordering_cause
from lib.fabric.schemas import parse_chunk, parse_manifest
from tests.fabric.target_helpers import (
    SPACE,
    Env,
    changed_since,
    descriptor,
    hydrate,
    make_env,
    prepared,
    publish,
    reachable,
    rows,
    seqs,
    snapshot,
)


def _chunk_ids(env: Env, source, snap, target_chunk_bytes: int = 512 * 1024, ready=None) -> list[str]:
    ready = ready or prepared(source, snap, target_chunk_bytes=target_chunk_bytes)
    return [
        cell_id(
            session_chunk_cause(
                SPACE,
                env.owner,
                source_id=ready.source_id,
                native_session_id=ready.native_session_id,
                part=chunk.part,
                content_hash=chunk.content_hash,
            )
        )
        for chunk in ready.chunks
    ]


def _publish_two(env: Env, target_chunk_bytes: int = 4096) -> tuple[dict[str, int], list]:
    target = env.target()
    source = descriptor()
    snaps = [snapshot("s1", messages=40, text="x" * 300), snapshot("s2", messages=30, text="y" * 300)]
    with target.publication() as pub:
        pub.begin_source(source, None)
        for snap in snaps:
            pub.add_prepared(prepared(source, snap, target_chunk_bytes=target_chunk_bytes))
        pub.end_source({"sourceId": "codex", "inventoryComplete": True, "complete": True,
                        "listedSessionIds": ["s1", "s2"]})
        pub.commit()
    return seqs(env.store), snaps


def _graph_seqs(env: Env, at: dict[str, int], snaps: list) -> dict[str, tuple[list[int], int]]:
    """Each session's chunk seqs and manifest seq."""
    target = env.target()
    manifests = {key: row["manifest"].id for key, row in rows(target).items()}
    out = {}
    for snap in snaps:
        chunk_ids = _chunk_ids(env, descriptor(), snap, target_chunk_bytes=4096)
        assert len(chunk_ids) > 1
        out[snap.summary.native_session_id] = (
            [at[c] for c in chunk_ids], at[manifests[f"codex/{snap.summary.native_session_id}"]],
        )
    return out


def test_the_graphs_of_several_sessions_commit_in_one_transaction_before_the_indexes(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    at, snaps = _publish_two(env)
    target = env.target()
    graphs = _graph_seqs(env, at, snaps)
    graph_seqs = {seq for chunks, manifest in graphs.values() for seq in (*chunks, manifest)}
    assert len(graph_seqs) == 1  # both sessions, every chunk and manifest: one commit
    index_seq = at[target.all_index_id()]
    assert at[target.recent_index_id()] == index_seq
    assert at[cell_id(ordering_cause(SPACE, env.owner))] == index_seq
    assert max(graph_seqs) < index_seq


def test_a_batch_past_its_byte_bound_commits_between_graphs_chunks_before_their_manifest(
    tmp_path: Path, monkeypatch
) -> None:
    import lib.fabric.graph_batch as graph_batch

    monkeypatch.setattr(graph_batch, "MAX_BYTES", 1)  # every graph in its own commit
    env = make_env(tmp_path)
    at, snaps = _publish_two(env)
    target = env.target()
    graphs = _graph_seqs(env, at, snaps)
    all_seqs = []
    for chunk_seqs, manifest_seq in graphs.values():
        assert len(set(chunk_seqs)) == len(chunk_seqs)  # a chunk graph is never split
        assert max(chunk_seqs) < manifest_seq
        all_seqs += [*chunk_seqs, manifest_seq]
    assert max(all_seqs) < at[target.all_index_id()]


def test_a_second_publish_of_identical_input_writes_no_chunk_or_manifest_only_index_cells(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path)
    target = env.target()
    source = descriptor()
    snaps = [snapshot("s1", messages=6), snapshot("s2", messages=3)]
    publish(target, source, snaps)
    manifests = [row["manifest"].id for row in rows(target).values()]
    session_cells = reachable(env.store, manifests)
    before = env.store.head(SPACE)
    env.clock.advance(minutes=5)  # a rewritten manifest would get a new observedAt and cell

    summary, results = publish(target, source, snaps)

    assert [r.action for r in results] == ["unchanged", "unchanged"]
    assert summary.written == 0
    changed = changed_since(env.store, before)
    assert changed, "the indexes are rewritten"
    assert not changed & session_cells
    index_cells = reachable(
        env.store, [target.all_index_id(), target.recent_index_id()], skip_fields=frozenset({"manifest"})
    )
    assert changed <= index_cells | {cell_id(ordering_cause(SPACE, env.owner))}
    assert [row["manifest"].id for row in rows(target).values()] == manifests


def test_a_changed_session_gets_a_new_manifest_and_the_prior_graph_stays_intact(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    source = descriptor()
    publish(target, source, [snapshot("s1", messages=2)])
    old = rows(target)["codex/s1"]["manifest"].id
    old_value = hydrate(target, old)

    _, results = publish(target, source, [snapshot("s1", messages=3)])

    new = rows(target)["codex/s1"]["manifest"].id
    assert results[0].action == "written"
    assert new != old
    assert hydrate(target, old) == old_value
    assert len(hydrate(target, new)["normalized"]["messages"]) == 3


def test_a_driver_change_rewrites_the_manifest_of_an_unchanged_snapshot(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    snap = snapshot("s1", messages=4)
    publish(target, descriptor(driver="codex-app-server"), [snap])
    old = rows(target)["codex/s1"]
    chunk_ids = set(_chunk_ids(env, descriptor(), snap))
    before = env.store.head(SPACE)

    _, results = publish(target, descriptor(driver="acp"), [snap])

    row = rows(target)["codex/s1"]
    assert results[0].action == "written"
    assert row["snapshotHash"] == old["snapshotHash"]
    assert row["manifest"].id != old["manifest"].id
    assert row["driver"] == "acp"
    assert hydrate(target, row["manifest"].id)["driver"] == "acp"
    assert not changed_since(env.store, before) & chunk_ids  # chunks are the same content


def test_a_published_manifest_hydrates_to_the_snapshot_it_was_prepared_from(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    source = descriptor()
    snap = snapshot("s1", messages=25, text="z" * 200, updated_at=None)
    publish(target, source, [snap])
    row = rows(target)["codex/s1"]
    manifest = parse_manifest(hydrate(target, row["manifest"].id))
    events = []
    for descriptor_ in manifest["chunks"]:
        chunk = parse_chunk(descriptor_["chunk"])
        assert chunk["contentHash"] == descriptor_["contentHash"]
        assert len(chunk["events"]) == descriptor_["eventCount"]
        events += chunk["events"]
    assert events == snap.events
    assert manifest["normalized"]["messages"] == [m.to_wire() for m in snap.normalized_messages]
    assert manifest["metadata"] == {"id": "s1", "native": True}
    assert "raw" not in manifest["summary"]
    assert manifest["snapshotHash"] == row["snapshotHash"]
    assert manifest["complete"] is True
    assert row["manifestHash"].startswith("sha256:")



def test_the_manifest_hash_spliced_from_the_prepared_messages_stream_is_the_whole_manifests_hash(
    tmp_path: Path,
) -> None:
    from lib.fabric.cell_id import session_version_cause
    from lib.fabric.session_graph import (
        GraphTarget,
        chunk_descriptor,
        manifest_value,
        write_session_graph,
    )
    from lib.fabric.store import Labels
    from lib.fabric.values import Link
    from lib.hashing import content_hash

    env = make_env(tmp_path)
    ready = prepared(descriptor(), snapshot("s1", messages=25, text="z\u00e9" * 200))
    assert ready.messages_stream is not None
    graphs = GraphTarget(env.store, SPACE, env.owner, env.owner, Labels.owned_by(env.owner))
    fields = {"metadata": {"m": 1}, "summary": dict(ready.summary), "messages": ready.normalized_messages,
              "snapshot_hash": ready.snapshot_hash, "revision": None, "observed_at": "2026-12-01T12:00:00Z",
              "complete": True}
    ids = {"key": ready.key, "source_id": ready.source_id, "native_session_id": ready.native_session_id,
           "driver": "codex"}
    write = write_session_graph(graphs, **ids, chunks=ready.chunks, manifest_fields=fields,
                                messages_stream=ready.messages_stream)
    chunk_ids = _chunk_ids(env, descriptor(), None, ready=ready)
    chunks = [chunk_descriptor(c, Link(i, SPACE)) for c, i in zip(ready.chunks, chunk_ids, strict=True)]
    whole = manifest_value(owner=env.owner, **ids, chunks=chunks, **fields)
    assert write.manifest_hash == content_hash(whole)
    cause = session_version_cause(SPACE, env.owner, source_id=ready.source_id,
                                  native_session_id=ready.native_session_id, driver="codex",
                                  content_hash=content_hash(whole))
    assert write.manifest.id == cell_id(cause) and env.store.existing(SPACE, [write.manifest.id])


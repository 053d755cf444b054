"""Graph commits against a real SQLite store: one transaction, no needless rewrites,
field-level patches, labels, fast paths, and reported (not retried) failures."""

from __future__ import annotations

import pytest

from lib.fabric.cell_id import cell_id
from lib.fabric.commit_rules import Patch, Write
from lib.fabric.documents import Labels
from lib.fabric.graph_commit import (
    GraphCommitError,
    commit_graph,
    field_changes,
    same_value,
    stage_graph,
)
from lib.fabric.graph_plan import plan_graph
from lib.fabric.store_errors import PreconditionFailed, WriteDenied
from tests.fabric.recording_store import RecordingStore

SPACE = "did:key:z6MkCommitSpace"
OWNER = "did:key:z6MkCommitOwner"
ME = "did:key:z6MkCommitWriter"
OTHER = "did:key:z6MkSomeoneElse"
SCOPE = {"spaceDid": SPACE, "ownerDid": OWNER, "agentConnector": "session-index-array-elements"}
ROOT_CAUSE = {"spaceDid": SPACE, "ownerDid": OWNER, "agentConnector": "all-session-index"}
LABELS = Labels((OWNER,), (ME,))


@pytest.fixture
def store(tmp_path):
    store = RecordingStore(tmp_path / "fabric.db")
    yield store
    store.close()


def plan(value, root_cause=ROOT_CAUSE):
    return plan_graph(root_cause, value, SCOPE)


def index(*sessions, **extra):
    return {
        "schema": "commonfabric.agent-connector.session-index",
        "sessions": list(sessions),
        **extra,
    }


def session(key, title="t", **extra):
    return {
        "key": key,
        "title": title,
        "recentMessages": [{"id": f"{key}/m1", "text": "hi"}],
        **extra,
    }


def test_a_new_graph_is_written_in_one_commit_with_children_before_parents(store):
    graph = plan(index(session("a"), session("b")))
    result = commit_graph(store, SPACE, ME, LABELS, graph)
    ids = [c.id for c in graph.cells()]
    assert list(result.written) == ids and result.unchanged == ()
    assert len(store.plans) == 1
    assert list(store.plans[0].ops) == ids
    assert store.changes_since(SPACE, 0) == sorted((cell, result.seq) for cell in ids)
    for cell in graph.cells():
        document = store.read(SPACE, cell.id)
        assert document.value == cell.value
        assert document.labels == LABELS


def test_committing_the_same_graph_again_rewrites_nothing(store):
    graph = plan(index(session("a"), session("b")))
    first = commit_graph(store, SPACE, ME, LABELS, graph)
    again = commit_graph(store, SPACE, ME, LABELS, plan(index(session("a"), session("b"))))
    assert again.written == () and again.seq is None
    assert set(again.unchanged) == set(first.written)
    assert store.head(SPACE) == first.seq
    assert len(store.plans) == 1


def test_only_the_cells_whose_values_changed_are_rewritten(store):
    first = commit_graph(store, SPACE, ME, LABELS, plan(index(session("a"), session("b"))))
    graph = plan(index(session("a"), session("b", title="renamed")))
    result = commit_graph(store, SPACE, ME, LABELS, graph)
    row_b = graph.root.value["sessions"][1].id
    # b keeps its cell (keyed identity), so the root's links do not change either
    assert result.written == (row_b,)
    assert store.changes_since(SPACE, first.seq) == [(row_b, result.seq)]
    assert store.read(SPACE, row_b).value["title"] == "renamed"


def test_a_changed_object_cell_gets_a_patch_of_only_its_changed_and_removed_fields(store):
    commit_graph(store, SPACE, ME, LABELS, plan(index(session("a", note="x"), generation=1)))
    graph = plan(index(session("a", title="new"), generation=2))
    commit_graph(store, SPACE, ME, LABELS, graph)
    ops = store.plans[-1].ops
    row = graph.root.value["sessions"][0].id
    assert isinstance(ops[row], Patch)
    assert set(ops[row].set) == {"title"} and ops[row].delete == {"note"}
    assert isinstance(ops[graph.root.id], Patch) and set(ops[graph.root.id].set) == {"generation"}
    assert store.read(SPACE, row).value == graph.children[-1].value


def test_a_field_another_writer_sets_before_the_patch_commits_survives_it(store):
    commit_graph(store, SPACE, ME, LABELS, plan(index(session("a"), generation=1)))
    root = plan(index()).root.id

    def concurrent_writer():
        with store.transaction(SPACE, ME) as tx:
            tx.patch(root, set={"checkouts": ["/src/repo"]})
            tx.commit()

    store.before_commit = concurrent_writer
    graph = plan(index(session("a"), generation=2))
    commit_graph(store, SPACE, ME, LABELS, graph)
    stored = store.read(SPACE, root).value
    assert stored["generation"] == 2 and stored["checkouts"] == ["/src/repo"]


def test_a_patched_or_rewritten_cell_keeps_its_labels_and_new_cells_get_the_given_ones(store):
    shared = Labels((OWNER,), (ME, OTHER))
    commit_graph(store, SPACE, ME, shared, plan(index(session("a"))))
    graph = plan(index(session("a", title="new"), session("b")))
    commit_graph(store, SPACE, ME, LABELS, graph)
    row_a, row_b = (link.id for link in graph.root.value["sessions"])
    assert store.read(SPACE, row_a).labels == shared
    assert store.read(SPACE, graph.root.id).labels == shared
    assert store.read(SPACE, row_b).labels == LABELS


def test_a_value_of_another_type_or_a_non_object_value_is_written_whole(store):
    cause = {"spaceDid": SPACE, "ownerDid": OWNER, "agentConnector": "health"}
    commit_graph(store, SPACE, ME, LABELS, plan({"sources": ["a", {"x": 1}], "n": 1}, cause))
    graph = plan({"sources": "none", "n": 2}, cause)
    commit_graph(store, SPACE, ME, LABELS, graph)
    assert isinstance(store.plans[-1].ops[graph.root.id], Patch)
    with store.transaction(SPACE, ME) as tx:
        tx.write(graph.root.id, ["not", "an", "object"])
        tx.commit()
    commit_graph(store, SPACE, ME, LABELS, graph)
    assert isinstance(store.plans[-1].ops[graph.root.id], Write)
    assert store.read(SPACE, graph.root.id).value == {"sources": "none", "n": 2}
    scalars = plan({"xs": [{"id": "e", "v": 1}]}, cause)
    commit_graph(store, SPACE, ME, LABELS, scalars)
    element = scalars.children[0].id
    with store.transaction(SPACE, ME) as tx:
        tx.write(element, 7)
        tx.commit()
    commit_graph(store, SPACE, ME, LABELS, scalars)
    assert isinstance(store.plans[-1].ops[element], Write)


def test_existing_documents_are_read_in_batches(store):
    graph = plan(index(*(session(f"s{i}") for i in range(600))))
    commit_graph(store, SPACE, ME, LABELS, graph)
    cells = len(graph.cells())
    assert cells == 1201
    assert len(store.read_batches) == 3
    assert sorted(store.ids_read()) == sorted(c.id for c in graph.cells())


def test_cells_known_to_be_unchanged_are_skipped_without_reading(store):
    first = commit_graph(store, SPACE, ME, LABELS, plan(index(session("a"), session("b"))))
    store.read_batches.clear()
    graph = plan(index(session("a"), session("b", title="renamed")))
    result = commit_graph(store, SPACE, ME, LABELS, graph, known_unchanged=first.hashes)
    row_b = graph.root.value["sessions"][1].id
    assert store.ids_read() == [row_b]
    assert result.written == (row_b,)


def test_a_known_hash_that_differs_from_the_planned_value_is_read_and_compared(store):
    graph = plan(index(session("a")))
    stale = {c.id: b"\0" * 32 for c in graph.cells()}
    result = commit_graph(store, SPACE, ME, LABELS, graph, known_unchanged=stale)
    assert set(result.written) == {c.id for c in graph.cells()}


def test_an_existing_content_addressed_root_skips_the_whole_graph(store):
    chunk_cause = {**ROOT_CAUSE, "agentConnector": "session-chunk", "contentHash": "sha256:01"}
    graph = plan(index(session("a")), chunk_cause)
    commit_graph(store, SPACE, ME, LABELS, graph, skip_if_root_exists=True)
    store.read_batches.clear()
    result = commit_graph(store, SPACE, ME, LABELS, graph, skip_if_root_exists=True)
    assert result.written == () and result.seq is None
    assert set(result.unchanged) == {c.id for c in graph.cells()}
    assert store.read_batches == [] and len(store.plans) == 1


def test_a_commit_the_store_denies_is_reported_with_its_code_and_changes_nothing(store):
    graph = plan(index(session("a")))
    commit_graph(store, SPACE, OTHER, Labels((OWNER,), (OTHER,)), graph)
    head = store.head(SPACE)
    with pytest.raises(WriteDenied) as caught:
        commit_graph(store, SPACE, ME, LABELS, plan(index(session("a", title="x"), session("b"))))
    assert caught.value.code == "store-write-denied"
    assert store.head(SPACE) == head
    assert len(store.plans) == 2


def test_a_commit_failed_by_a_concurrent_delete_is_reported_and_not_retried(store):
    commit_graph(store, SPACE, ME, LABELS, plan(index(session("a"))))
    graph = plan(index(session("a", title="new")))
    row = graph.root.value["sessions"][0].id

    def concurrent_delete():
        with store.transaction(SPACE, ME) as tx:
            tx.delete(row)
            tx.commit()

    store.before_commit = concurrent_delete
    head = store.head(SPACE)
    with pytest.raises(PreconditionFailed) as caught:
        commit_graph(store, SPACE, ME, LABELS, graph)
    assert caught.value.code == "store-precondition-failed"
    assert len(store.plans) == 3  # first commit, the delete, the one failed attempt
    assert store.head(SPACE) == head + 1  # only the delete landed
    assert store.read(SPACE, row) is None


def test_a_graph_planned_for_another_space_is_refused(store):
    graph = plan(index())
    with pytest.raises(GraphCommitError) as caught:
        commit_graph(store, "did:key:z6MkElsewhere", ME, LABELS, graph)
    assert caught.value.code == "space-mismatch"


def test_field_changes_compare_fabric_values_not_python_equality():
    old = {"a": 1, "b": 0.0, "c": "s", "d": [1], "gone": None}
    new = {"a": True, "b": -0.0, "c": "s", "d": [1.0], "e": 2}
    assert field_changes(old, new) == ({"a": True, "b": -0.0, "e": 2}, ["gone"])
    assert same_value([1, {"x": 2}], [1.0, {"x": 2.0}])
    assert not same_value(1, "1")


def test_two_graphs_sharing_rows_stage_in_one_transaction_and_each_shared_row_once(store):
    recent_cause = {**ROOT_CAUSE, "agentConnector": "recent-session-index"}
    recent, complete = (
        plan(index(session("a")), recent_cause),
        plan(index(session("a"), session("b"))),
    )
    with store.transaction(SPACE, ME) as tx:
        first = stage_graph(store, tx, recent, LABELS)
        second = stage_graph(store, tx, complete, LABELS, known_unchanged=first.hashes)
        tx.write(cell_id("ordering"), {"generation": 1})
        seq = tx.commit()
    row_a, row_b = (link.id for link in complete.root.value["sessions"])
    assert row_a in first.written and row_a in second.unchanged and row_b in second.written
    assert len(store.plans) == 1
    assert {cell for cell, at in store.changes_since(SPACE, 0) if at == seq} == {
        *first.written,
        *second.written,
        cell_id("ordering"),
    }

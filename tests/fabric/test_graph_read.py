"""Hydration of committed graphs from a real SQLite store: round trips, preserved link
fields, the per-read cache, batched reads, and clear errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.fabric.cell_id import cell_id
from lib.fabric.graph_commit import commit_graph
from lib.fabric.graph_plan import plan_graph
from lib.fabric.graph_read import GraphReadError, read_graph_value
from lib.fabric.sqlite_store import SQLiteStore
from lib.fabric.store import Labels
from lib.fabric.values import Link
from lib.hashing import HOLE, UNDEFINED, BigInt, value_hash
from tests.fabric.recording_store import RecordingStore

SPACE = "did:key:z6MkReadSpace"
OWNER = "did:key:z6MkReadOwner"
ME = "did:key:z6MkReadWriter"
SCOPE = {
    "spaceDid": SPACE,
    "ownerDid": OWNER,
    "agentConnector": "session-events-array-elements",
    "sourceId": "codex",
    "nativeSessionId": "s-1",
    "part": 0,
    "contentHash": "sha256:" + "1" * 64,
}
ROOT_CAUSE = {"spaceDid": SPACE, "ownerDid": OWNER, "agentConnector": "session-chunk"}
LABELS = Labels((OWNER,), (ME,))


@pytest.fixture
def store(tmp_path):
    store = RecordingStore(tmp_path / "fabric.db")
    yield store
    store.close()


def publish(store, value, root_cause=ROOT_CAUSE):
    graph = plan_graph(root_cause, value, SCOPE)
    commit_graph(store, SPACE, ME, LABELS, graph)
    return graph


def put(store, cause, value) -> str:
    cell = cell_id(cause)
    with store.transaction(SPACE, ME) as tx:
        tx.write(cell, value)
        tx.commit()
    return cell


leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=70)
    | st.binary(max_size=8)
    | st.just(UNDEFINED)
    | st.integers(-5, 5).map(BigInt)
)
keys = st.sampled_from(
    ["id", "key", "uuid", "part", "text", "type", "/slash", "sourceId"]
) | st.text(max_size=4)
json_values = st.recursive(
    leaves,
    lambda children: (
        st.lists(children | st.just(HOLE), max_size=5) | st.dictionaries(keys, children, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(keys, json_values, max_size=5))
def test_a_value_round_trips_through_plan_commit_and_hydration(value):
    with SQLiteStore(":memory:") as store:
        graph = publish(store, value)
        hydrated = read_graph_value(store, SPACE, graph.root.id)
    assert value_hash(hydrated) == value_hash(value)


def test_a_session_chunk_round_trips_to_an_equal_value(store):
    value = {
        "schema": "commonfabric.agent-connector.session-chunk",
        "events": [
            {"uuid": "e1", "message": {"content": [{"type": "text", "text": "hi"}, ["a", ["b"]]]}},
            {"type": "no-id", "payload": {"items": [1, 1, 2]}},
            {"type": "no-id", "payload": {"items": [1, 1, 2]}},
        ],
    }
    graph = publish(store, value)
    assert read_graph_value(store, SPACE, graph.root.id) == value


def test_a_link_under_a_preserved_field_stays_a_link_and_other_links_hydrate(store):
    manifest = put(store, {"manifest": 1}, {"chunks": "big"})
    row_link = Link(id=manifest, space=SPACE)
    value = {"sessions": [{"key": "a", "manifest": row_link, "also": row_link}]}
    graph = publish(store, value)
    kept = read_graph_value(store, SPACE, graph.root.id, preserve_link_fields={"manifest"})
    assert kept["sessions"][0]["manifest"] == row_link
    assert kept["sessions"][0]["also"] == {"chunks": "big"}
    full = read_graph_value(store, SPACE, graph.root.id)
    assert full["sessions"][0]["manifest"] == {"chunks": "big"}


def test_links_to_another_space_stay_links(store):
    elsewhere = Link(id=cell_id("x"), space="did:key:z6MkOtherSpace")
    graph = publish(store, {"refs": [elsewhere], "direct": elsewhere})
    assert read_graph_value(store, SPACE, graph.root.id) == {
        "refs": [elsewhere],
        "direct": elsewhere,
    }


def test_a_link_path_selects_a_value_inside_the_linked_graph(store):
    target = publish(store, {"sessions": [{"key": "a", "tags": ["x", "y"]}]}, {"target": 1})
    pointer = put(
        store,
        {"pointer": 1},
        {"tag": Link(id=target.root.id, space=SPACE, path=("sessions", 0, "tags", 1))},
    )
    assert read_graph_value(store, SPACE, pointer) == {"tag": "y"}
    bad = put(store, {"pointer": 2}, {"tag": Link(id=target.root.id, space=SPACE, path=("nope",))})
    with pytest.raises(GraphReadError) as caught:
        read_graph_value(store, SPACE, bad)
    assert caught.value.code == "bad-link-path"


def test_a_repeated_link_is_read_and_built_once(store):
    shared = put(store, {"shared": 1}, {"big": list(range(3))})
    link = Link(id=shared, space=SPACE)
    root = put(store, {"root": 1}, {"a": link, "b": [link, {"c": link}]})
    value = read_graph_value(store, SPACE, root)
    assert value == {"a": {"big": [0, 1, 2]}, "b": [{"big": [0, 1, 2]}, {"c": {"big": [0, 1, 2]}}]}
    assert store.ids_read().count(shared) == 1
    assert value["a"] is value["b"][0]


def test_a_cache_reused_across_reads_answers_without_reading_and_keys_on_preserved_fields(store):
    manifest = put(store, {"manifest": 1}, {"m": 1})
    graph = publish(store, {"sessions": [{"key": "a", "manifest": Link(id=manifest, space=SPACE)}]})
    cache: dict = {}
    first = read_graph_value(
        store, SPACE, graph.root.id, preserve_link_fields={"manifest"}, cache=cache
    )
    store.read_batches.clear()
    again = read_graph_value(
        store, SPACE, graph.root.id, preserve_link_fields={"manifest"}, cache=cache
    )
    assert again == first and store.read_batches == []
    full = read_graph_value(store, SPACE, graph.root.id, cache=cache)
    assert full["sessions"][0]["manifest"] == {"m": 1}
    assert first["sessions"][0]["manifest"] == Link(id=manifest, space=SPACE)


def test_children_are_read_in_batches_not_one_query_per_child(store):
    graph = publish(store, {"events": [{"n": i, "xs": [i, i + 1]} for i in range(600)]})
    store.read_batches.clear()
    value = read_graph_value(store, SPACE, graph.root.id)
    assert len(value["events"]) == 600
    # root, then 600 events (2 batches), then 1200 nested elements (3 batches)
    assert [len(b) for b in store.read_batches] == [1, 500, 100, 500, 500, 200]


def test_a_missing_cell_is_a_clear_error_naming_the_cell_and_its_parent(store):
    graph = publish(store, {"events": [{"id": "e1"}, {"id": "e2"}]})
    gone = graph.root.value["events"][1].id
    with store.transaction(SPACE, ME) as tx:
        tx.delete(gone)
        tx.commit()
    with pytest.raises(GraphReadError) as caught:
        read_graph_value(store, SPACE, graph.root.id)
    assert caught.value.code == "missing-cell"
    assert gone in caught.value.message and graph.root.id in caught.value.message
    with pytest.raises(GraphReadError) as caught:
        read_graph_value(store, SPACE, cell_id("never written"))
    assert caught.value.code == "missing-cell"


def test_a_cycle_of_links_is_reported_instead_of_recursing_forever(store):
    a, b = cell_id("cycle/a"), cell_id("cycle/b")
    with store.transaction(SPACE, ME) as tx:
        tx.write(a, {"next": Link(id=b, space=SPACE)})
        tx.write(b, {"next": Link(id=a, space=SPACE)})
        tx.commit()
    with pytest.raises(GraphReadError) as caught:
        read_graph_value(store, SPACE, a)
    assert caught.value.code == "link-cycle"

"""The stable array planner: identities, collisions, scopes, links, order, determinism."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.fabric import graph_plan
from lib.fabric.cell_id import cell_id
from lib.fabric.graph_plan import GraphPlanError, PlannedGraph, plan_graph
from lib.fabric.values import Link
from lib.hashing import HOLE, UNDEFINED, content_hash, value_hash
from tests.support.speedups import implementation  # noqa: F401  (each test: Python, then C)

SPACE = "did:key:z6MkPlanSpace"
OWNER = "did:key:z6MkPlanOwner"
INDEX_SCOPE = {
    "spaceDid": SPACE,
    "ownerDid": OWNER,
    "agentConnector": "session-index-array-elements",
}
CHUNK_SCOPE = {
    "spaceDid": SPACE,
    "ownerDid": OWNER,
    "agentConnector": "session-events-array-elements",
    "sourceId": "codex",
    "nativeSessionId": "s-1",
    "part": 0,
    "contentHash": "sha256:" + "0" * 64,
}
ROOT_CAUSE = {"spaceDid": SPACE, "ownerDid": OWNER, "agentConnector": "recent-session-index"}


def plan(value, scope=INDEX_SCOPE) -> PlannedGraph:
    return plan_graph(ROOT_CAUSE, value, scope)


def cells_by_id(graph: PlannedGraph):
    return {c.id: c for c in graph.cells()}


def element_identities(graph: PlannedGraph, field: str):
    """The identity of each element of the root's array `field`, in array order."""
    cells = cells_by_id(graph)
    return [cells[link.id].cause["identity"] for link in graph.root.value[field]]


def identity_of(element):
    return element_identities(plan({"items": [element]}), "items")[0]


# ---- identities


def test_an_element_cause_has_the_spec_shape_with_scope_path_and_identity():
    graph = plan({"sessions": [{"key": "codex/session-id", "title": "t"}]})
    (child,) = graph.children
    assert child.cause == {
        "agentConnector": "array-element",
        "scope": INDEX_SCOPE,
        "path": ["sessions"],
        "identity": {"field": "key", "value": "codex/session-id"},
    }
    assert child.id == cell_id(child.cause)
    assert child.value == {"key": "codex/session-id", "title": "t"}


def test_primary_identity_fields_are_tried_in_the_spec_order():
    order = ["key", "id", "uuid", "commandId", "messageId", "toolCallId", "toolUseId"]
    for i, field in enumerate(order):
        element = {f: f"v-{f}" for f in order[i:]}
        assert identity_of(element) == {"field": field, "value": f"v-{field}"}


def test_an_identity_value_must_be_a_non_empty_string_or_a_finite_number():
    assert identity_of({"key": 7, "id": "x"}) == {"field": "key", "value": 7}
    assert identity_of({"key": 1.5}) == {"field": "key", "value": 1.5}
    for unusable in ("", None, True, {"a": 1}, [1], float("nan"), float("inf")):
        assert identity_of({"key": unusable, "uuid": "u"}) == {"field": "uuid", "value": "u"}


def test_source_and_native_session_ids_together_identify_an_element():
    element = {"sourceId": "codex", "nativeSessionId": "abc", "part": 2, "title": "t"}
    assert identity_of(element) == {"fields": {"sourceId": "codex", "nativeSessionId": "abc"}}


def test_secondary_fields_identify_an_element_without_a_primary_field_or_pair():
    element = {"part": 0, "contentHash": "sha256:ab", "sourceId": "codex", "eventCount": 3}
    assert identity_of(element) == {"fields": {"part": 0, "contentHash": "sha256:ab"}}
    assert identity_of({"sessionId": "s", "x": 1}) == {"fields": {"sessionId": "s"}}


def test_secondary_fields_do_not_join_an_identity_that_does_not_collide():
    # a keyed row keeps its cell when its contentHash changes
    first = identity_of({"key": "k", "contentHash": "sha256:01"})
    second = identity_of({"key": "k", "contentHash": "sha256:02"})
    assert first == second == {"field": "key", "value": "k"}


def test_secondary_fields_tell_apart_siblings_that_share_a_key():
    graph = plan({"items": [{"key": "k", "part": 0}, {"key": "k", "part": 1}]})
    assert element_identities(graph, "items") == [
        {"field": "key", "value": "k", "secondary": {"part": 0}},
        {"field": "key", "value": "k", "secondary": {"part": 1}},
    ]


def test_an_element_without_identity_fields_is_identified_by_its_content_hash():
    for element in ({"text": "hello"}, "hello", 42, None, [1, 2], {"key": ""}):
        assert identity_of(element) == {"contentHash": content_hash(element)}


def test_siblings_with_one_identity_and_different_content_each_add_their_collision_hash():
    a, b = {"id": "x", "text": "a"}, {"id": "x", "text": "b"}
    graph = plan({"items": [a, b]})
    assert element_identities(graph, "items") == [
        {"field": "id", "value": "x", "collisionHash": content_hash(a)},
        {"field": "id", "value": "x", "collisionHash": content_hash(b)},
    ]


def test_siblings_still_alike_after_their_secondary_fields_add_collision_hashes():
    a, b = {"id": "x", "part": 1, "t": "a"}, {"id": "x", "part": 1, "t": "b"}
    ids = element_identities(plan({"items": [a, b]}), "items")
    assert ids == [
        {"field": "id", "value": "x", "secondary": {"part": 1}, "collisionHash": content_hash(a)},
        {"field": "id", "value": "x", "secondary": {"part": 1}, "collisionHash": content_hash(b)},
    ]


def test_exact_duplicates_are_numbered_from_one_after_the_first_occurrence():
    keyed = {"id": "x", "t": 1}
    ids = element_identities(plan({"items": [keyed, "s", dict(keyed), "s", dict(keyed)]}), "items")
    assert ids == [
        {"field": "id", "value": "x"},
        {"contentHash": content_hash("s")},
        {"field": "id", "value": "x", "duplicate": 1},
        {"contentHash": content_hash("s"), "duplicate": 1},
        {"field": "id", "value": "x", "duplicate": 2},
    ]


def test_duplicates_of_colliding_elements_keep_their_collision_hash_and_are_numbered():
    a, b = {"id": "x", "t": "a"}, {"id": "x", "t": "b"}
    ids = element_identities(plan({"items": [a, b, dict(a)]}), "items")
    assert ids[0] == {"field": "id", "value": "x", "collisionHash": content_hash(a)}
    assert ids[2] == {**ids[0], "duplicate": 1}
    assert len(set(graph_plan.encode_value(i) for i in ids)) == 3


# ---- scopes, paths and links


def test_arrays_become_links_to_element_cells_in_the_graph_space():
    graph = plan({"a": {"b": [1, 2]}, "n": 3})
    links = graph.root.value["a"]["b"]
    assert [type(x) for x in links] == [Link, Link]
    assert all(x.space == SPACE and x.path == () for x in links)
    cells = cells_by_id(graph)
    assert [cells[x.id].value for x in links] == [1, 2]
    assert [cells[x.id].cause["path"] for x in links] == [["a", "b"], ["a", "b"]]
    assert graph.root.value["n"] == 3
    assert graph.root.id == cell_id(ROOT_CAUSE)


def test_a_nested_array_is_scoped_by_its_elements_complete_cause_and_its_path_restarts():
    row = {"key": "codex/a", "meta": {"recentMessages": [{"id": "m1"}]}}
    graph = plan({"sessions": [row]})
    cells = cells_by_id(graph)
    row_cell = cells[graph.root.value["sessions"][0].id]
    (message_link,) = row_cell.value["meta"]["recentMessages"]
    message = cells[message_link.id]
    assert message.cause["scope"] == row_cell.cause
    assert message.cause["path"] == ["meta", "recentMessages"]
    assert message.cause["identity"] == {"field": "id", "value": "m1"}


def test_equal_nested_ids_in_two_sessions_resolve_to_different_cells():
    graph = plan(
        {
            "sessions": [
                {"key": "a", "messages": [{"id": "m1"}]},
                {"key": "b", "messages": [{"id": "m1"}]},
            ]
        }
    )
    cells = cells_by_id(graph)
    nested = [cells[link.id].value["messages"][0].id for link in graph.root.value["sessions"]]
    assert nested[0] != nested[1]


def test_arrays_inside_arrays_are_elements_with_their_own_cells():
    graph = plan({"grid": [[1, 2], [3]]})
    cells = cells_by_id(graph)
    rows = [cells[link.id] for link in graph.root.value["grid"]]
    assert [[cells[x.id].value for x in row.value] for row in rows] == [[1, 2], [3]]
    assert all(cells[x.id].cause["path"] == [] for row in rows for x in row.value)
    assert cells[rows[0].value[0].id].cause["scope"] == rows[0].cause


def test_links_in_the_data_are_atomic_and_their_payload_is_not_split():
    target = Link(id=cell_id("elsewhere"), space=SPACE, path=("items", 0))
    graph = plan({"manifest": target, "chunks": [{"part": 0, "link": target}]})
    assert graph.root.value["manifest"] is target
    (chunk,) = graph.children
    assert chunk.value["link"] is target
    assert len(graph.children) == 1


def test_holes_and_undefined_entries_stay_in_place_without_cells():
    graph = plan({"items": [HOLE, UNDEFINED, 1]})
    assert graph.root.value["items"][:2] == [HOLE, UNDEFINED]
    assert len(graph.children) == 1


def test_children_come_before_the_parents_that_link_to_them():
    value = {"s": [{"key": "a", "m": [{"id": 1, "parts": [["x"], "y"]}]}, {"key": "b", "m": []}]}
    graph = plan(value)
    written: set[str] = set()
    for cell in graph.cells():
        assert _links_in(cell.value) <= written
        written.add(cell.id)
    assert graph.cells()[-1] is graph.root


def _links_in(value) -> set[str]:
    if isinstance(value, Link):
        return {value.id}
    if isinstance(value, dict):
        return set().union(*map(_links_in, value.values()))
    if isinstance(value, list):
        return set().union(*map(_links_in, value))
    return set()


def test_the_base_scope_must_name_its_space_owner_and_connector():
    for missing in ("spaceDid", "ownerDid", "agentConnector"):
        scope = {k: v for k, v in INDEX_SCOPE.items() if k != missing}
        with pytest.raises(GraphPlanError) as caught:
            plan_graph(ROOT_CAUSE, {}, scope)
        assert caught.value.code == "invalid-scope"


def test_object_keys_that_are_not_strings_are_refused_with_a_code():
    with pytest.raises(GraphPlanError) as caught:
        plan({"items": [{"nested": [{1: "x"}]}]})
    assert caught.value.code == "unsupported-value"


# ---- determinism


def _shuffled(value, rng: random.Random):
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


def _ids(graph: PlannedGraph) -> list[str]:
    return [c.id for c in graph.cells()]


def test_the_same_value_in_any_key_order_plans_the_same_cells():
    value = {
        "events": [
            {"type": "a", "payload": {"content": [{"text": "x", "type": "t"}, {"id": 1}]}},
            {"uuid": "u", "blocks": [[1, {"k": "v"}], "z"]},
        ],
        "meta": {"tags": ["b", "a"]},
    }
    expected = _ids(plan(value, CHUNK_SCOPE))
    for seed in range(5):
        assert _ids(plan(_shuffled(value, random.Random(seed)), CHUNK_SCOPE)) == expected


def test_an_element_keeps_its_cell_when_it_moves_to_another_position():
    a = {"uuid": "a", "content": [{"text": "hi"}]}
    b = {"text": "no identity", "parts": [1, 2]}
    before = plan({"events": [a, b, "c"]})
    after = plan({"events": ["c", b, {"new": True}, a]})
    ids_before = [x.id for x in before.root.value["events"]]
    ids_after = [x.id for x in after.root.value["events"]]
    assert ids_after[3] == ids_before[0]
    assert ids_after[1] == ids_before[1]
    assert ids_after[0] == ids_before[2]
    # nested cells move with their element
    assert set(_ids(before)) - {before.root.id} <= set(_ids(after))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats() | st.text(max_size=80),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.sampled_from(["id", "key", "part", "text", "x", "é", "\U0001f600", "a" * 70])
            | st.text(max_size=4),
            children,
            max_size=5,
        )
    ),
    max_leaves=40,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5), json_values, max_size=4))
def test_every_planned_id_is_the_cell_id_of_its_cause_and_every_id_is_distinct(value):
    graph = plan(value, CHUNK_SCOPE)
    for cell in graph.children:
        assert cell.id == cell_id(cell.cause)
    ids = _ids(graph)
    assert len(ids) == len(set(ids))


@settings(max_examples=200, deadline=None)
@given(st.lists(json_values, max_size=6))
def test_content_hashes_from_an_ancestors_encoding_equal_each_elements_value_hash(items):
    planner = graph_plan._Planner(SPACE)
    for item in items:
        assert planner.digest(item) == value_hash(item)
        for nested in _nested_elements(item):
            assert planner.digest(nested) == value_hash(nested)


def _nested_elements(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _nested_elements(v)
    elif isinstance(value, list):
        for v in value:
            yield v
            yield from _nested_elements(v)


def test_a_nested_element_is_hashed_from_its_ancestors_encoding_not_walked_again(monkeypatch):
    walked = []
    real = graph_plan._encode

    def counting(v, buf, marks):
        walked.append(id(v))
        real(v, buf, marks)

    monkeypatch.setattr(graph_plan, "_encode", counting)
    deep = {"t": "a", "xs": [{"t": "b", "ys": [{"t": "c", "zs": [{"t": "d"}]}]}]}
    plan({"items": [deep]})
    # every container is walked once, although four nested elements each needed a hash
    assert len(walked) == len(set(walked))


def test_object_keys_that_are_not_strings_are_refused_beside_arrays_too():
    with pytest.raises(GraphPlanError) as caught:
        plan({"a": [1], 2: [3]})
    assert caught.value.code == "unsupported-value"


def test_a_captured_value_plans_the_same_cells_as_the_plain_value():
    from lib.canonical import capture

    value = {"events": [{"uuid": "u", "content": [{"text": "x"}, [1, 2]]}, {"t": 1}, {"t": 1}]}
    plain, captured = plan(value, CHUNK_SCOPE), plan(capture(value), CHUNK_SCOPE)
    assert _ids(captured) == _ids(plain)
    assert [value_hash(c.value) for c in captured.cells()] == [
        value_hash(c.value) for c in plain.cells()
    ]


def test_nested_element_hashes_come_from_one_encoding_of_their_ancestor():
    planner = graph_plan._Planner(SPACE)
    inner = {"t": "c", "zs": [{"t": "d"}]}
    outer = {"t": "a", "xs": [{"t": "b", "ys": [inner]}]}
    assert planner.digest(outer) == value_hash(outer)
    # the nested elements' hashes were recorded while encoding `outer`, on either path
    assert planner.digests[id(inner)] == value_hash(inner)
    assert planner.digest(inner) == value_hash(inner) and id(inner) not in planner.digests

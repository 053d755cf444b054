"""Capture: an immutable canonical copy, taken once, whose hash stream comes with it."""

from __future__ import annotations

import copy
import json
import math
import pickle
from collections import OrderedDict
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lib.canonical import CaptureError, capture, capture_encoded
from lib.frozen import FrozenDict
from lib.hashing import HOLE, UNDEFINED, BigInt, encode_value, value_hash
from lib.types import NormalizedMessage, SessionSummary
from tests.support.speedups import implementation  # noqa: F401  (each test: Python, then C)


def test_arrays_become_tuples_and_objects_frozen_dicts_in_canonical_key_order():
    got = capture({"b": [1, {"z": 1, "a": [2]}], "a": "x"})
    assert got == {"a": "x", "b": (1, {"a": (2,), "z": 1})}
    assert type(got) is FrozenDict and list(got) == ["a", "b"]
    assert type(got["b"]) is tuple and list(got["b"][1]) == ["a", "z"]


def test_a_captured_value_cannot_be_changed():
    got = capture({"a": {"b": 1}})
    for mutate in (
        lambda: got.__setitem__("a", 2),
        lambda: got.__delitem__("a"),
        lambda: got.update(x=1),
        lambda: got.pop("a"),
        lambda: got.popitem(),
        lambda: got.setdefault("q", 1),
        lambda: got.clear(),
        lambda: got["a"].__setitem__("b", 3),
    ):
        with pytest.raises(TypeError):
            mutate()
    with pytest.raises(TypeError):
        got |= {"x": 1}
    assert got == {"a": {"b": 1}}


def test_mutating_the_original_after_capture_changes_nothing_captured():
    original = {"items": [{"text": "a"}], "n": 1}
    got, stream, *_ = capture_encoded(original)
    original["items"][0]["text"] = "changed"
    original["items"].append(2)
    original["n"] = 2
    assert got == {"items": ({"text": "a"},), "n": 1}
    assert encode_value(got) == stream


def test_the_fused_stream_is_the_value_hash_stream_of_both_original_and_capture():
    value = {"x": [1, 2.5, None, True, "s" * 70, {"k": UNDEFINED}, b"\x00", 2**60], "y": -0.0}
    got, stream, *_ = capture_encoded(value)
    assert stream == encode_value(value) == encode_value(got)


def test_subclasses_become_their_base_types():
    class S(str):
        pass

    class I(int):  # noqa: E742
        pass

    got = capture(OrderedDict([(S("k"), [S("v"), I(3), bytearray(b"ab")])]))
    assert got == {"k": ("v", 3, b"ab")}
    key = next(iter(got))
    assert type(key) is str and [type(x) for x in got["k"]] == [str, int, bytes]


def test_sentinels_bigints_and_links_are_kept_as_they_are():
    class Link:
        def __fabric_json__(self):
            return {"/": {"link@1": {"id": "of:x", "path": [], "space": "did:key:z"}}}

    link = Link()
    got = capture([UNDEFINED, HOLE, BigInt(5), link])
    assert got[0] is UNDEFINED and got[1] is HOLE and got[3] is link
    assert type(got[2]) is BigInt
    assert value_hash(got) == value_hash([UNDEFINED, HOLE, BigInt(5), link.__fabric_json__()])


def test_pydantic_models_are_captured_in_their_camel_case_wire_form():
    message = NormalizedMessage(id="m", role="user", kind="userMessage", text="hi", event_index=0)
    got = capture({"summary": SessionSummary(native_session_id="s"), "m": message})
    assert got["m"]["eventIndex"] == 0 and got["m"]["parentId"] is None
    assert got["summary"]["nativeSessionId"] == "s"


def test_any_mapping_and_tuple_is_captured():
    got = capture(MappingProxyType({"a": (1, [2])}))
    assert got == {"a": (1, (2,))}


def test_a_cycle_is_refused_with_the_cycle_code():
    a: list = [1]
    a.append({"again": a})
    with pytest.raises(CaptureError) as info:
        capture(a)
    assert info.value.code == "cycle"


def test_deep_nesting_without_a_cycle_is_refused_as_too_deep():
    value: list = []
    for _ in range(5000):
        value = [value]
    with pytest.raises(CaptureError) as info:
        capture(value)
    assert info.value.code == "too-deep"


def test_shared_references_are_not_cycles():
    shared = {"s": 1}
    assert capture([shared, shared, {"x": shared}]) == ({"s": 1}, {"s": 1}, {"x": {"s": 1}})


@pytest.mark.parametrize("bad", [{1: "a"}, {"a": {1, 2}}, [object()], {"a": 1, 2: "b"}, HOLE])
def test_unsupported_values_and_non_string_keys_are_refused(bad):
    with pytest.raises(CaptureError) as info:
        capture(bad)
    assert info.value.code == "unsupported-value"


def test_frozen_dicts_survive_copy_pickle_and_json():
    got = capture({"b": 1, "a": [1, {"c": None}]})
    assert copy.copy(got) is got
    assert copy.deepcopy(got) == got and type(copy.deepcopy(got)) is FrozenDict
    assert pickle.loads(pickle.dumps(got)) == got
    assert json.dumps(got, separators=(",", ":")) == '{"a":[1,{"c":null}],"b":1}'


def test_a_frozen_dict_built_directly_is_in_canonical_order():
    assert list(FrozenDict({"b": 1, "a": 2, "\u00e9": 3})) == ["a", "b", "\u00e9"]
    with pytest.raises(TypeError):
        FrozenDict({1: 2})


def test_keys_with_a_lone_surrogate_sort_by_their_utf8_bytes():
    value = {"\ue000": 1, "\ud800": 2}  # code point order differs from UTF-8 order
    got, stream, *_ = capture_encoded(value)
    assert list(got) == ["\ue000", "\ud800"]
    assert stream == encode_value(value) == encode_value(got)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=70),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25,
)


@given(json_values)
def test_capture_is_idempotent_and_hashes_like_the_original(value):
    got, stream, *_ = capture_encoded(value)
    again, stream2, *_ = capture_encoded(got)
    assert again == got and stream2 == stream == encode_value(value)


def test_capture_reports_whether_orjson_writes_every_number_as_json_dumps_does():
    assert capture_encoded({"a": ["é", 1, 2**70, 0.0, -0.0, 1e-4, -2.5e300]}).exact_numbers
    for odd in (1e-05, -1.5e-07, 5e-324, math.nan, math.inf, -math.inf):
        assert not capture_encoded({"a": [1, odd]}).exact_numbers
    assert capture_encoded({"a": [None, 2.5]}).plain_json
    for odd in (UNDEFINED, b"x", BigInt(1), [1, HOLE]):
        assert not capture_encoded({"a": odd}).plain_json

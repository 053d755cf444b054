"""Value hashes match Common Fabric's published byte stream (DESIGN.md vectors)."""

from __future__ import annotations

import base64
import hashlib
import math
from collections import OrderedDict
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lib.hashing import (
    HOLE,
    UNDEFINED,
    BigInt,
    HashError,
    content_hash,
    encode_value,
    value_hash,
    value_hash_with_elements,
)
from tests.support.speedups import implementation  # noqa: F401  (each test: Python, then C)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_the_design_vectors_encode_exactly():
    assert encode_value(42).hex() == "234045000000000000"
    assert encode_value("hello").hex() == "240568656c6c6f"
    assert encode_value("").hex() == "2400"
    assert encode_value(-0.0).hex() == "238000000000000000"


def test_the_design_cell_id_vector_hashes_to_its_published_id():
    cause = {"causal": "location/2026-07-01"}
    assert encode_value(cause) == b"\x11\x24\x06causal\x24\x13location/2026-07-01\x00"
    assert _b64(value_hash(cause)) == "d7_RmD4fNpTUheithVm0Q1Vha0Rn32c06qA_hOHE8x8"


def test_bigints_use_minimal_twos_complement():
    assert encode_value(BigInt(0)).hex() == "260100"
    assert encode_value(BigInt(128)).hex() == "26020080"
    assert encode_value(BigInt(-129)).hex() == "2602ff7f"
    assert encode_value(BigInt(-128)).hex() == "260180"
    assert encode_value(BigInt(127)).hex() == "26017f"


def test_ints_are_numbers_up_to_two_to_the_53_and_bigints_beyond():
    assert encode_value(2**53) == encode_value(float(2**53))
    assert encode_value(-(2**53)) == encode_value(float(-(2**53)))
    assert encode_value(2**53 + 1).hex() == "260720000000000001"
    assert encode_value(42) == encode_value(42.0)


def test_scalars_have_their_tags():
    assert encode_value(None) == b"\x20"
    assert encode_value(UNDEFINED) == b"\x21"
    assert encode_value(False) == b"\x22\x00"
    assert encode_value(True) == b"\x22\x01"
    assert encode_value(b"\x01\x02") == b"\x25\x02\x01\x02"


def test_bools_are_not_numbers():
    assert value_hash(True) != value_hash(1)
    assert value_hash([False]) != value_hash([0])
    assert value_hash({"a": True}) != value_hash({"a": 1})


def test_every_nan_is_the_canonical_nan_and_negative_zero_keeps_its_sign():
    assert encode_value(math.nan).hex() == "237ff8000000000000"
    assert encode_value(-math.nan).hex() == "237ff8000000000000"
    assert value_hash(0.0) != value_hash(-0.0)


def test_strings_longer_than_64_utf8_bytes_are_hashed_once_keys_too():
    text = "é" * 33  # 66 UTF-8 bytes but 33 characters
    assert encode_value(text) == b"\xf0" + hashlib.sha256(text.encode()).digest()
    assert encode_value("x" * 64) == b"\x24\x40" + b"x" * 64
    assert encode_value({text: 1}) == (
        b"\x11\xf0" + hashlib.sha256(text.encode()).digest() + encode_value(1) + b"\x00"
    )


def test_a_lone_surrogate_hashes_like_the_replacement_character():
    assert value_hash("a\ud800") == value_hash("a\ufffd")


def test_object_keys_sort_by_utf8_bytes_whatever_the_insertion_order():
    a = {"b": 1, "a": 2, "\u00e9": 3, "\U0001f600": 4, "\uff5e": 5}
    b = dict(reversed(list(a.items())))
    assert value_hash(a) == value_hash(b)
    assert encode_value({"b": 1, "a": 2}).startswith(b"\x11\x24\x01a")


def test_any_mapping_hashes_like_a_dict_and_tuples_like_lists():
    d = {"x": [1, "two", None], "y": {"z": True}}
    assert value_hash(MappingProxyType(d)) == value_hash(d)
    assert value_hash(OrderedDict(d)) == value_hash(d)
    assert value_hash({"x": (1, "two", None), "y": {"z": True}}) == value_hash(d)


def test_runs_of_holes_are_one_count():
    assert encode_value([HOLE, HOLE, 1, HOLE]) == (
        b"\x10\x01\x02" + encode_value(1) + b"\x01\x01\x00"
    )
    assert value_hash([HOLE]) != value_hash([None]) != value_hash([UNDEFINED])


def test_a_value_with_fabric_json_hashes_as_that_json():
    class Link:
        def __fabric_json__(self):
            return {"/": {"link@1": {"id": "of:x", "path": [], "space": "did:key:z"}}}

    assert value_hash([Link()]) == value_hash([Link().__fabric_json__()])
    assert value_hash({"l": Link()}) == value_hash({"l": Link().__fabric_json__()})


@pytest.mark.parametrize("bad", [{1: "a"}, {("a",): 1}, object(), {1, 2}, HOLE])
def test_values_outside_the_model_are_refused_with_a_code(bad):
    with pytest.raises(HashError) as info:
        value_hash(bad)
    assert info.value.code == "unsupported-value"


def test_content_hash_is_sha256_prefixed_hex_of_the_value_hash():
    assert content_hash("hello") == "sha256:" + hashlib.sha256(b"\x24\x05hello").hexdigest()


def test_array_hash_with_elements_gives_each_element_its_own_hash():
    arr = [{"a": 1}, "x" * 100, [1, 2], None]
    whole, elements = value_hash_with_elements(arr)
    assert whole == value_hash(arr)
    assert elements == [value_hash(v) for v in arr]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False)
    | st.text(max_size=80),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_equal_values_have_equal_hashes_including_copies(value):
    import copy
    import json

    assert value_hash(value) == value_hash(copy.deepcopy(value))
    if not _has_float(value):
        assert value_hash(value) == value_hash(json.loads(json.dumps(value)))


def _has_float(v):
    if isinstance(v, float):
        return True
    if isinstance(v, list):
        return any(_has_float(x) for x in v)
    if isinstance(v, dict):
        return any(_has_float(x) for x in v.values())
    return False


@given(st.lists(json_values, min_size=2, max_size=6, unique_by=lambda v: value_hash(v)))
def test_reordering_an_array_of_distinct_values_changes_its_hash(items):
    assert value_hash(items) != value_hash(list(reversed(items)))


@given(st.integers(min_value=-(2**60), max_value=2**60))
def test_an_int_and_its_string_hash_differently(n):
    assert value_hash(n) != value_hash(str(n))
    assert value_hash([n]) != value_hash([str(n)])


@given(st.dictionaries(st.text(max_size=6), json_values, min_size=1, max_size=4), st.data())
def test_changing_one_member_changes_the_object_hash(obj, data):
    key = data.draw(st.sampled_from(sorted(obj)))
    changed = dict(obj)
    changed[key] = [obj[key]]
    assert value_hash(obj) != value_hash(changed)
    nulled = dict(obj)
    nulled[key] = None
    undefined = dict(obj)
    undefined[key] = UNDEFINED
    assert value_hash(nulled) != value_hash(undefined)
    extra = dict(obj)
    extra[key + "\x00"] = None
    assert value_hash(extra) != value_hash(obj)


def test_keys_with_a_lone_surrogate_sort_by_their_utf8_bytes_the_first_time_too():
    value = {"\ud801": 2, "\ue001": 1}  # U+FFFD (EF BF BD) sorts after U+E001 (EE 80 81)
    expected = b"\x11\x24\x03\xee\x80\x81" + encode_value(1) + b"\x24\x03\xef\xbf\xbd" + encode_value(2) + b"\x00"
    assert encode_value(value) == expected
    assert encode_value(value) == expected


def test_a_frozen_dict_hashes_like_the_dict_it_holds():
    from lib.frozen import FrozenDict

    d = {"b": [1, {"y": 2, "x": 1}], "a": None}
    assert value_hash(FrozenDict(d)) == value_hash(d)


def test_an_encoded_subtree_hashes_like_the_value_it_encodes():
    from lib.hashing import Encoded

    part = {"k": [1, "two" * 40, None]}
    assert value_hash({"a": Encoded(encode_value(part)), "b": 1}) == value_hash({"a": part, "b": 1})
    assert value_hash([Encoded(encode_value(part))]) == value_hash([part])


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6), st.data())
def test_object_hash_with_some_values_given_encoded_equals_the_content_hash_of_the_object(obj, data):
    from lib.hashing import Encoded, object_hash

    spliced = {k: Encoded(encode_value(v)) if data.draw(st.booleans()) else v for k, v in obj.items()}
    assert object_hash(spliced) == content_hash(obj) == content_hash(spliced)


def test_object_hash_orders_keys_by_utf8_bytes_and_refuses_a_key_that_is_not_a_string():
    from lib.hashing import object_hash

    keys = {"\ud800": 1, "\uffff": 2, "a": [3]}
    assert object_hash(keys) == content_hash(keys)
    with pytest.raises(HashError):
        object_hash({1: 2})

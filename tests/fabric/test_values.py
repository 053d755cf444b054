"""The fvj1 encoding of Fabric values, and links."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.fabric.value_decoding import decode, from_fvj1_string, loads
from lib.fabric.values import (
    Link,
    ValueEncodingError,
    dumps,
    encode,
    to_fvj1_string,
)
from lib.hashing import HOLE, UNDEFINED, BigInt, value_hash

SPACE = "did:key:z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw"
LINK = Link("of:fid1:d7_RmD4fNpTUheithVm0Q1Vha0Rn32c06qA_hOHE8x8", SPACE, ("sessions", 3))


def same(a, b) -> bool:
    """Structural equality that tells -0.0 from 0.0, NaN from nothing, and BigInt from int."""
    if isinstance(a, tuple):
        a = list(a)
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


any_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=12)
links = st.builds(
    Link,
    st.text(max_size=8).map(lambda s: "of:" + s),
    st.text(min_size=1, max_size=8),
    st.lists(st.one_of(st.text(max_size=4), st.integers(0, 99)), max_size=3).map(tuple),
)
leaves = st.one_of(
    st.none(),
    st.just(UNDEFINED),
    st.booleans(),
    st.floats(),
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.integers(-(2**53), 2**53).map(BigInt),
    any_text,
    st.binary(max_size=12),
    links,
)
keys = st.one_of(
    any_text, any_text.map(lambda s: "/" + s), st.sampled_from(["/", "/quote", "/object"])
)
fabric_values = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(st.one_of(children, st.just(HOLE)), max_size=5),
        st.lists(children, max_size=5).map(tuple),
        st.dictionaries(keys, children, max_size=5),
    ),
    max_leaves=25,
)
plain_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53), 2**53),
        st.floats(allow_nan=False, allow_infinity=False).filter(
            lambda f: f != 0 or math.copysign(1, f) > 0
        ),
        st.text(max_size=8),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.text(max_size=6).filter(lambda k: not k.startswith("/")), children, max_size=4
        ),
    ),
    max_leaves=20,
)


@settings(max_examples=400)
@given(fabric_values)
def test_every_value_of_the_model_survives_a_round_trip_through_fvj1_text(value):
    text = dumps(value)
    back = loads(text)
    # the all-ASCII text earlier versions stored reads as the same value
    assert same(back, loads(json.dumps(encode(value), separators=(",", ":"))))
    assert same(value, back)
    assert value_hash(back) == value_hash(value)
    assert same(value, from_fvj1_string(to_fvj1_string(value)))


@settings(max_examples=200)
@given(fabric_values)
def test_encoded_values_are_json_and_decode_back_without_text(value):
    encoded = encode(value)
    assert json.loads(json.dumps(encoded)) == json.loads(dumps(value))
    assert same(value, decode(json.loads(json.dumps(encoded))))


@given(plain_json)
def test_plain_json_is_written_as_itself_and_passes_through_unchanged(value):
    assert encode(value) is value
    assert json.loads(dumps(value)) == value
    assert decode(value) is value


def test_tagged_forms_are_the_ones_common_fabric_writes():
    assert encode(UNDEFINED) == {"/Undefined@1": None}
    assert encode(BigInt(42)) == {"/BigInt@1": "Kg"}
    assert encode(2**53) == 2**53  # still a number
    assert encode(2**53 + 1) == {"/BigInt@1": "IAAAAAAAAQ"}
    assert encode(-(2**64)) == {"/BigInt@1": "_wAAAAAAAAAA"}
    assert [encode(v) for v in (-0.0, math.nan, math.inf, -math.inf)] == [
        {"/SpecialNumber@1": s} for s in ("-0", "NaN", "+Infinity", "-Infinity")
    ]
    assert encode(0.0) == 0.0
    assert encode(b"\xfb\xff") == {"/Bytes@1": "-_8"}
    assert encode([1, HOLE, HOLE]) == [1, {"/Hole@1": None}, {"/Hole@1": None}]


def test_bigints_use_minimal_twos_complement():
    big = 2**64
    assert loads(dumps(big)) == big
    for n, raw in ((128, b"\x00\x80"), (-129, b"\xff\x7f"), (-1, b"\xff")):
        tag = encode(BigInt(n))["/BigInt@1"]
        assert json.loads(dumps(raw))["/Bytes@1"] == tag
        assert loads(dumps(BigInt(n))) == n and type(loads(dumps(BigInt(n)))) is BigInt


def test_an_object_with_a_slash_key_is_quoted_when_it_is_plain_json():
    assert encode({"/path": {"/x": [1, "a"]}, "b": None}) == {
        "/quote": {"/path": {"/x": [1, "a"]}, "b": None}
    }
    assert encode({"/path": UNDEFINED, "b": {"/c": 1}}) == {
        "/object": {"/path": {"/Undefined@1": None}, "b": {"/quote": {"/c": 1}}}
    }


def test_a_link_is_written_as_its_quoted_json_form_and_reads_back_as_a_link():
    assert LINK.to_json() == {
        "/": {"link@1": {"id": LINK.id, "path": ["sessions", 3], "space": SPACE}}
    }
    assert encode({"manifest": LINK}) == {"manifest": {"/quote": LINK.to_json()}}
    assert loads(dumps({"manifest": LINK})) == {"manifest": LINK}
    # other writers may leave the link sigil unquoted
    assert loads(json.dumps(LINK.to_json())) == LINK


def test_a_link_hashes_as_its_json_form():
    assert value_hash(LINK) == value_hash(LINK.to_json())
    assert value_hash({"a": [LINK]}) == value_hash({"a": [LINK.to_json()]})


def test_a_link_needs_a_cell_id_and_a_path_of_keys_and_indexes():
    with pytest.raises(ValueEncodingError) as caught:
        Link("x", SPACE)
    assert caught.value.code == "invalid-link"
    with pytest.raises(ValueEncodingError):
        Link("of:x", SPACE, (1.5,))
    assert (
        Link.from_json({"/": {"link@1": {"id": "of:x", "path": [], "space": SPACE, "extra": 1}}})
        is None
    )


def test_values_outside_the_model_are_refused_with_a_stable_code():
    for bad in ({1, 2}, object(), HOLE, {1: "a"}):
        with pytest.raises(ValueEncodingError) as caught:
            dumps(bad)
        assert caught.value.code == "unsupported-value"
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ValueEncodingError) as caught:
        dumps(cycle)
    assert caught.value.code == "too-deep"


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        '{"a": Infinity}',
        '{"/Nope@1": 1}',
        '{"/Undefined@1": null, "b": 1}',
        '{"/SpecialNumber@1": "zero"}',
        '{"/Bytes@1": "!!"}',
        '{"/quote": [1]}',
        "{not json",
    ],
)
def test_text_that_is_not_fvj1_is_refused(text):
    with pytest.raises(ValueEncodingError) as caught:
        loads(text)
    assert caught.value.code == "invalid-fvj1"


def test_an_fvj1_string_carries_its_prefix():
    assert to_fvj1_string({"a": UNDEFINED}) == 'fvj1:{"a":{"/Undefined@1":null}}'
    with pytest.raises(ValueEncodingError):
        from_fvj1_string('{"a":1}')


def test_tuples_and_mappings_encode_as_arrays_and_objects():
    from types import MappingProxyType

    assert json.loads(dumps((1, (2,), MappingProxyType({"k": (3,)})))) == [1, [2], {"k": [3]}]


def test_text_is_utf8_and_a_lone_surrogate_falls_back_to_ascii_escapes():
    assert dumps({"é": ["ü😀", 1e-05]}) == '{"é":["ü😀",0.00001]}'
    lone = {"a": "x\ud800", "é": 1}
    text = dumps(lone)
    assert text == '{"a":"x\\ud800","\\u00e9":1}'
    assert loads(text) == lone
    assert loads('{"\\u00e9":["\\u00fc\\ud83d\\ude00",1e-05]}') == loads(dumps({"é": ["ü😀", 1e-05]}))

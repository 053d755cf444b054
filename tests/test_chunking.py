"""Event chunks: exact byte accounting, whole events, content hashes of captured events,
and JSON text that is json.dumps's byte for byte whether orjson or json.dumps wrote it."""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lib.hash_stream
from lib.canonical import capture
from lib.chunking import ChunkError, build_chunk, chunk_events, compact_json
from lib.frozen import FrozenDict
from lib.hashing import HOLE, UNDEFINED, BigInt, content_hash, value_hash
from tests.support.speedups import implementation  # noqa: F401  (each test: Python, then C)


def _utf8_len(value) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _event(i: int, size: int = 100) -> dict:
    return {"type": "agentMessage", "id": f"msg_{i}", "text": "é" * (i % 3) + "x" * size, "n": i}


def test_each_chunk_byte_length_is_its_compact_utf8_json_array_exactly():
    events = [_event(i, size=50 * (i % 7)) for i in range(60)]
    chunks = chunk_events(events, target_bytes=1000)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.byte_length == _utf8_len(list(chunk.events))
        assert chunk.byte_length == len(chunk.json_text.encode("utf-8"))
        assert chunk.byte_length <= 1000
        assert chunk.event_count == len(chunk.events)


def test_chunks_keep_every_event_whole_and_in_order():
    events = [_event(i) for i in range(25)]
    chunks = chunk_events(events, target_bytes=600)
    rebuilt = [event for chunk in chunks for event in chunk.events]
    assert rebuilt == events
    assert [c.part for c in chunks] == list(range(len(chunks)))


def test_a_chunk_is_filled_up_to_the_target_counting_brackets_and_commas():
    event = {"a": "x" * 10}
    size = _utf8_len(event)  # 16
    three = 2 + 3 * size + 2  # [e,e,e]
    chunks = chunk_events([event] * 7, target_bytes=three)
    assert [c.event_count for c in chunks] == [3, 3, 1]
    assert chunks[0].byte_length == three
    one_byte_short = chunk_events([event] * 7, target_bytes=three - 1)
    assert [c.event_count for c in one_byte_short] == [2, 2, 2, 1]


def test_an_event_larger_than_the_target_sits_alone_in_an_oversized_chunk():
    small, big = {"s": 1}, {"big": "y" * 5000}
    chunks = chunk_events([small, big, small], target_bytes=1000)
    assert [c.event_count for c in chunks] == [1, 1, 1]
    assert chunks[1].byte_length == 2 + _utf8_len(big) > 1000
    alone = chunk_events([big], target_bytes=1000)
    assert len(alone) == 1 and alone[0].event_count == 1


def test_no_events_give_part_zero_with_an_empty_array():
    (chunk,) = chunk_events([])
    assert (chunk.part, chunk.event_count, chunk.byte_length, chunk.json_text) == (0, 0, 2, "[]")
    assert chunk.events == []
    assert chunk.content_hash == content_hash(())


def test_the_content_hash_is_the_value_hash_of_the_captured_events_array():
    events = [_event(i) for i in range(10)]
    chunks = chunk_events(events, target_bytes=400)
    for chunk in chunks:
        assert chunk.content_hash == content_hash(chunk.events)
        assert chunk.content_hash == content_hash([capture(e) for e in chunk.events])


def test_events_are_parsed_again_from_the_text_in_canonical_key_order():
    chunk = build_chunk(0, [{"b": [1, {"d": 2, "c": 3}], "a": None}])
    (event,) = chunk.events
    assert type(event) is dict and list(event) == ["a", "b"]
    assert list(event["b"][1]) == ["c", "d"]
    assert chunk.json_text == '[{"a":null,"b":[1,{"c":3,"d":2}]}]'
    event["a"] = "changed"  # the caller's own copy
    assert chunk.events[0]["a"] is None


def test_mutating_an_event_after_chunking_changes_nothing_chunked():
    event = {"items": [1, 2]}
    chunk = build_chunk(0, [event])
    before = (chunk.content_hash, chunk.byte_length, chunk.json_text)
    event["items"].append(3)
    assert (chunk.content_hash, chunk.byte_length, chunk.json_text) == before
    assert chunk.events == [{"items": [1, 2]}]


def test_non_ascii_and_control_characters_are_measured_as_utf8_json():
    events = [{"t": "ü\u2028😀"}, {"t": "\x1b[31mred\x7f\n\t\"q\"\\"}, {"é": "k"}]
    chunk = build_chunk(0, events)
    assert chunk.byte_length == _utf8_len(events)
    assert chunk.orjson_text
    assert json.loads(chunk.json_text) == events


def _reference_text(events) -> str:
    """What json.dumps writes for each captured event (all-escaped for a lone surrogate)."""
    texts = []
    for event in events:
        text = json.dumps(capture(event), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(capture(event), separators=(",", ":"), allow_nan=False)
        texts.append(text)
    return "[" + ",".join(texts) + "]"


@pytest.mark.parametrize(
    "event",
    [
        {"tiny": [1e-05, -1.5e-07, 9.99e-05, 5e-324], "ok": [1e-4, 1e16, 0.0, -0.0]},
        {"big": 2**70, "neg": -(2**64), "u64": 2**64 - 1, "edge": [2**53, 2**53 + 1]},
        {"lone": "a\ud800b", "k\udc00": "é"},
    ],
)
def test_numbers_and_strings_orjson_writes_otherwise_take_the_reference_text(event):
    chunk = build_chunk(0, [{"plain": "ü"}, event])
    assert chunk.json_text == _reference_text([{"plain": "ü"}, event])
    assert chunk.byte_length == len(chunk.json_text.encode("utf-8"))
    assert not chunk.orjson_text
    assert chunk.events == json.loads(chunk.json_text)


@pytest.mark.parametrize("bad", [UNDEFINED, [1, HOLE], b"raw", BigInt(3), math.nan, math.inf, {"a": {1, 2}}])
def test_values_plain_json_cannot_hold_are_refused(bad):
    with pytest.raises(ChunkError) as info:
        chunk_events([{"ok": 1}, {"bad": bad}])
    assert info.value.code == "unsupported-value"
    assert "event 1" in info.value.message


def test_compact_json_reports_utf8_length_for_either_encoder_path():
    value = capture({"a": "ß", "b": [1, 2.5, None, True]})
    for exact_numbers in (True, False):  # orjson, then json.dumps
        text, length = compact_json(value, exact_numbers)
        assert text == '{"a":"ß","b":[1,2.5,null,true]}' and length == len(text.encode())


json_events = st.dictionaries(
    st.text(max_size=5),
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=10,
    ),
    max_size=4,
)


@settings(max_examples=60)
@given(st.lists(json_events, max_size=12), st.integers(min_value=1, max_value=400))
def test_any_events_chunk_exactly_at_any_target(events, target):
    chunks = chunk_events(events, target_bytes=target)
    assert [e for c in chunks for e in c.events] == [json.loads(json.dumps(e)) for e in events]
    for chunk in chunks:
        assert chunk.byte_length == _utf8_len(list(chunk.events))
        assert chunk.byte_length <= target or chunk.event_count <= 1
        assert chunk.content_hash == content_hash(chunk.events)
    for before, after in zip(chunks, chunks[1:], strict=False):
        first_next = _utf8_len(after.events[0])
        assert before.byte_length + 1 + first_next > target


class Str(str):
    pass


class Int(int):
    pass


_characters = st.characters() | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
odd_texts = st.text(_characters, max_size=20) | st.sampled_from(
    ["x" * 65, "é" * 33, "a\x7f", 'q"\\\n\t\x00\x1f', "\u2028\u2029\ufeff😀", "lone \ud800"]
)
json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | st.one_of(  # about one leaf in six is one that orjson writes otherwise, or refuses
        st.integers(),
        st.sampled_from([2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1]),
        st.floats(),
        st.floats(min_value=-1e-3, max_value=1e-3),
        st.sampled_from([1e-05, -1.5e-07, 9.99e-05, 1e-4, 5e-324, 1e16, 1e22, -0.0, math.nan, math.inf]),
        odd_texts,
        st.builds(Str, st.text(max_size=5)),
        st.builds(Int, st.integers(-5, 5)),
    )
)
json_ish = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=4)
    | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    | st.dictionaries(odd_texts, inner, max_size=3)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3).map(FrozenDict)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(OrderedDict),
    max_leaves=12,
)


def _reference_event(event):
    """json.dumps's text of the captured event (all-escaped for a lone surrogate) and the
    reference walk's hash stream; None where chunking must refuse the event."""
    try:
        value = capture(event)
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError):  # CaptureError, a non-finite number, no JSON form
        return None
    stream = bytearray()
    lib.hash_stream._encode_into(value, stream)  # the pure-Python reference walk
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        raw = json.dumps(value, separators=(",", ":"), allow_nan=False).encode("ascii")
    return raw, bytes(stream)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.text(max_size=6) | odd_texts | st.integers(0, 3), json_ish, max_size=5))
def test_the_orjson_text_is_json_dumps_of_the_captured_event_or_the_event_is_refused(event):
    expected = _reference_event(event)
    if expected is None:
        with pytest.raises(ChunkError):
            build_chunk(0, [event])
        return
    chunk = build_chunk(0, [event])
    raw, stream = expected
    assert chunk.json_text.encode("utf-8") == b"[" + raw + b"]"
    assert chunk.byte_length == len(raw) + 2
    assert chunk.content_hash == "sha256:" + hashlib.sha256(b"\x10" + stream + b"\x00").hexdigest()
    assert value_hash(chunk.events) == value_hash([capture(event)])
    if chunk.orjson_text:  # orjson reads back exactly what json reads
        assert orjson.loads(chunk.json_text) == json.loads(chunk.json_text)

"""The C fast path (lib._speedups) gives the pure-Python reference's results for every
value of the model, or says Unsupported for exactly the values outside plain JSON; and
the JSON text orjson writes for what it accepts is json.dumps's, byte for byte."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lib.hash_stream
import lib.hashing
from lib import _speedups  # built by `make install` (pyproject.toml); these tests need it
from lib.canonical import capture_encoded
from lib.fabric import graph_plan
from lib.frozen import FrozenDict
from lib.hashing import HOLE, UNDEFINED, BigInt, Encoded, HashError, encode_value, value_hash
from tests.support.speedups import compiler_available

ROOT = Path(__file__).resolve().parents[1]



class Str(str):
    pass


class Int(int):
    pass


class Fabric:
    """An object hashed as its __fabric_json__ (a Link does this)."""

    def __init__(self, value):
        self.value = value

    def __fabric_json__(self):
        return self.value


class Unregistered:
    """A __fabric_json__ type the reference walk has not met yet."""

    def __fabric_json__(self):
        return {"a": 1}


def reference_stream(value) -> bytes:
    """lib.hashing's pure-Python walk, whatever the fast path says."""
    buf = bytearray()
    lib.hash_stream._encode_into(value, buf)
    return bytes(buf)


class pure_python:
    """Within: every lib.hashing entry point takes the reference path."""

    def __enter__(self):
        self.was_on = lib.hashing._c_encode is not None
        lib.hashing.use_speedups(False)

    def __exit__(self, *exc):
        lib.hashing.use_speedups(self.was_on)


def _no_surrogate(s: str) -> bool:
    return not any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def is_plain(value, depth: int = 0) -> bool:
    """The values the C path must handle itself: exact built-in JSON types, and objects
    of a type the reference walk registered as hashed by its __fabric_json__."""
    t = type(value)
    if t in lib.hash_stream._fabric_types:
        return depth + 1 <= _speedups.MAX_DEPTH and is_plain(value.__fabric_json__(), depth + 1)
    if value is None or t is bool or t is float:
        return True
    if t is int:
        return -(2**53) <= value <= 2**53
    if t is str:
        return _no_surrogate(value)
    if t in (list, tuple, dict, FrozenDict):
        if depth + 1 > _speedups.MAX_DEPTH:
            return False
        if t in (list, tuple):
            return all(is_plain(v, depth + 1) for v in value)
        return all(type(k) is str and _no_surrogate(k) and is_plain(v, depth + 1) for k, v in value.items())
    return False


def deep_list(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


characters = st.characters() | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
texts = (
    st.text(characters, max_size=40)
    | st.builds(lambda s, n: s * n, st.text(characters, min_size=1, max_size=3), st.integers(1, 40))
    | st.sampled_from(["", "x" * 64, "x" * 65, "é" * 32, "é" * 33, "a\x7f", 'q"\\\n\t\x00\x1f'])
)
keys = texts | st.text(max_size=4) | st.builds(Str, st.text(max_size=3)) | st.integers(0, 3)
leaves = (
    st.none()
    | st.just(UNDEFINED)
    | st.booleans()
    | st.integers()
    | st.integers(-(2**53) - 2, -(2**53) + 2)
    | st.integers(2**53 - 2, 2**53 + 2)
    | st.builds(BigInt, st.integers(-300, 300))
    | st.builds(Int, st.integers(-5, 5))
    | st.floats()
    | st.sampled_from([-0.0, math.nan, -math.nan, math.inf, -math.inf, 1e300, 5e-324])
    | texts
    | st.builds(Str, st.text(max_size=5))
    | st.binary(max_size=6)
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4)
    | st.lists(inner | st.just(HOLE), max_size=4)
    | st.lists(inner, max_size=4).map(tuple)
    | st.dictionaries(keys, inner, max_size=4)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4).map(FrozenDict)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(OrderedDict)
    | inner.map(Fabric),
    max_leaves=24,
)
plain_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats() | st.text(max_size=80),
    lambda inner: st.lists(inner, max_size=4)
    | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3).map(FrozenDict),
    max_leaves=30,
)


def test_the_install_builds_the_extension_wherever_a_compiler_exists():
    assert lib.hashing.speedups_available() or not compiler_available()


def test_the_pure_python_switch_turns_the_fast_path_off_in_a_new_process():
    probe = "import lib.hashing as h; print(h._c_encode is None, h.speedups_available())"
    env = {**os.environ, "AGENTCTL_PURE_PYTHON": "1"}
    off = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert off.stdout.split()[0] == "True"
    env["AGENTCTL_PURE_PYTHON"] = "0"
    on = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    used, available = on.stdout.split()
    assert used == ("False" if available == "True" else "True")


def test_the_design_vectors_encode_exactly_in_c():
    assert _speedups.encode(42).hex() == "234045000000000000"
    assert _speedups.encode("hello").hex() == "240568656c6c6f"
    assert _speedups.encode("").hex() == "2400"
    assert _speedups.encode(-0.0).hex() == "238000000000000000"
    cause = {"causal": "location/2026-07-01"}
    assert _speedups.encode(cause) == b"\x11\x24\x06causal\x24\x13location/2026-07-01\x00"


@settings(max_examples=600, deadline=None)
@given(values)
def test_c_gives_the_reference_stream_or_unsupported_exactly_outside_plain_json(value):
    try:
        expected = reference_stream(value)
    except HashError:
        expected = None
    try:
        got = _speedups.encode(value)
    except _speedups.Unsupported:
        assert not is_plain(value)
    else:
        assert is_plain(value) and got == expected
    # and the public entry points, whichever path they take, give the reference
    if expected is not None:
        assert encode_value(value) == expected


@settings(max_examples=400, deadline=None)
@given(plain_values)
def test_plain_values_never_leave_the_fast_path_and_the_json_text_is_the_reference(value):
    with pure_python():
        ref = capture_encoded(value)
    assert _speedups.encode(value) == ref.stream
    if _orjson_exact(value):
        assert _speedups.encode_json(value) == ref.stream
        expected = json.dumps(ref.value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        assert orjson.dumps(value, option=orjson.OPT_SORT_KEYS) == expected.encode("utf-8")
    else:
        with pytest.raises(_speedups.Unsupported):
            _speedups.encode_json(value)


def _orjson_exact(value) -> bool:
    """No float that JSON cannot hold or that orjson writes otherwise (0 < |x| < 1e-4)."""
    if isinstance(value, float):
        return math.isfinite(value) and (value == 0 or abs(value) >= 1e-4)
    if isinstance(value, list | tuple):
        return all(_orjson_exact(v) for v in value)
    if isinstance(value, dict):
        return all(_orjson_exact(v) for v in value.values())
    return True


@settings(max_examples=200, deadline=None)
@given(st.lists(plain_values, max_size=5))
def test_c_marks_every_nested_array_element_like_the_planner_walk(items):
    c_marks: list = []
    stream = _speedups.encode(items, c_marks)
    py_buf, py_marks = bytearray(), []
    graph_plan._encode(items, py_buf, py_marks)
    assert stream == bytes(py_buf)
    assert sorted(c_marks) == sorted(py_marks)


@pytest.mark.parametrize(
    "value",
    [
        UNDEFINED,
        [1, HOLE],
        b"raw",
        BigInt(3),
        2**53 + 1,
        -(2**53) - 1,
        Unregistered(),
        Encoded(b"\x20"),
        "lone \ud800",
        {"k\udfff": 1},
        {1: "a"},
        {Str("k"): 1},
        Str("s"),
        Int(1),
        OrderedDict(a=1),
        {"a": [1, {2, 3}]},
        deep_list(201),
    ],
)
def test_values_outside_plain_json_are_unsupported_and_the_reference_decides(value):
    with pytest.raises(_speedups.Unsupported):
        _speedups.encode(value)
    try:
        expected = reference_stream(value)
    except HashError as exc:
        with pytest.raises(HashError) as info:
            encode_value(value)
        assert info.value.code == exc.code
    else:
        assert encode_value(value) == expected


def test_nesting_up_to_the_limit_stays_in_c_and_a_cycle_is_unsupported():
    assert _speedups.encode(deep_list(_speedups.MAX_DEPTH)) == reference_stream(deep_list(_speedups.MAX_DEPTH))
    cycle: list = [1]
    cycle.append({"again": cycle})
    with pytest.raises(_speedups.Unsupported):
        _speedups.encode(cycle)
    with pytest.raises(HashError) as info:
        value_hash(cycle)
    assert info.value.code == "too-deep"


def test_numbers_orjson_writes_otherwise_hash_in_c_but_leave_the_json_path():
    for number in (math.nan, math.inf, -math.inf, 1e-05, -1.5e-07, 5e-324):
        assert _speedups.encode([number]) == reference_stream([number])
        with pytest.raises(_speedups.Unsupported):
            _speedups.encode_json({"n": number})
    for number in (0.0, -0.0, 1e-4, 0.1, 1e16, 1e300):
        assert _speedups.encode_json([number]) == reference_stream([number])
        assert orjson.dumps(number) == json.dumps(number).encode()


def test_orjson_escapes_like_the_standard_encoder_for_every_ascii_character():
    text = "".join(chr(c) for c in range(128)) * 3 + "é\u2028\u2029\ufeff😀"
    value = {"t": text, text: [text]}
    assert _speedups.encode_json(value) == reference_stream(value)
    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    assert orjson.dumps(value, option=orjson.OPT_SORT_KEYS) == expected.encode("utf-8")


def test_a_large_realistic_session_hashes_and_writes_identically_on_both_paths():
    from tests.bench.corpus import SessionGenerator

    events = SessionGenerator(3).session(3, 400_000)["events"]
    with pure_python():
        expected = [capture_encoded(e) for e in events]
    assert [_speedups.encode_json(e) for e in events] == [c.stream for c in expected]
    texts = [orjson.dumps(e, option=orjson.OPT_SORT_KEYS) for e in events]
    assert texts == [json.dumps(c.value, separators=(",", ":"), ensure_ascii=False).encode() for c in expected]


def _prepared_text(snapshot) -> str:
    import io

    from lib.prepare import prepare_session

    out = io.StringIO()
    prepare_session("codex", snapshot, target_chunk_bytes=20_000).write_record(out)
    return out.getvalue()


def test_both_paths_prepare_the_same_record_text_for_plain_and_odd_events():
    from tests.bench.corpus import SessionGenerator

    snapshot = SessionGenerator(5).session(5, 120_000)
    snapshot["events"] += [
        {"big": 2**70, "small": -(2**53) - 1},  # bigints: plain JSON, reference path
        {"lone": "a\ud800b", "k\udc00": 1, "\ue000": 2},  # lone surrogates in values and keys
        {"f": [0.1, -0.0, 1e300, 5e-324], "t": "é\u2028😀\x00\x7f"},
        {"nested": [[[[]]]], "empty": {}, "s": Str("sub"), "i": Int(7)},
    ]
    with pure_python():
        expected = _prepared_text(snapshot)
    assert _prepared_text(snapshot) == expected


def test_both_paths_refuse_the_same_events_with_the_same_error():
    from lib.chunking import ChunkError, chunk_events

    for bad in ({"n": math.nan}, {"u": UNDEFINED}, {1: "a"}, {"b": b"x"}):
        errors = []
        for fast in (True, False):
            lib.hashing.use_speedups(fast)
            try:
                with pytest.raises(ChunkError) as info:
                    chunk_events([{"ok": 1}, bad])
            finally:
                lib.hashing.use_speedups(True)
            errors.append((info.value.code, info.value.message))
        assert errors[0] == errors[1]


def test_a_fabric_type_the_reference_met_is_hashed_in_c_as_its_json():
    class Pointer:
        def __init__(self, target):
            self.target = target

        def __fabric_json__(self):
            return {"/": {"link@1": {"id": self.target, "path": [], "space": "did:key:z"}}}

    value = {"links": [Pointer("of:a"), Pointer("of:b")], "n": 1}
    with pytest.raises(_speedups.Unsupported):
        _speedups.encode(value)
    expected = reference_stream(value)  # meets Pointer, registers it
    assert _speedups.encode(value) == expected
    assert _speedups.encode(Pointer("of:c")) == reference_stream({"/": {"link@1": {"id": "of:c", "path": [], "space": "did:key:z"}}})
    with pytest.raises(_speedups.Unsupported):  # the JSON path keeps to plain values
        _speedups.encode_json(value)
    orphan = Pointer("of:d")
    del Pointer.__fabric_json__  # an object of the type without the method: the reference decides
    with pytest.raises(_speedups.Unsupported):
        _speedups.encode(orphan)
    with pytest.raises(HashError):
        encode_value(orphan)


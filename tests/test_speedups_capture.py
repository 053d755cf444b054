"""lib._speedups.capture: a session's summary and messages copied in C (plain JSON types,
ASCII keys sorted, FrozenDicts and tuples), exactly what lib.canonical's Python walk
makes, or Unsupported (the walk then does it)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import lib.hashing
from lib import _speedups  # built by `make install` (pyproject.toml); these tests need it
from lib.canonical import capture_encoded
from lib.frozen import FrozenDict
from tests.test_speedups import plain_values, pure_python, values


def _shape(value):
    """A captured value with every container's type and key order, and floats exactly."""
    t = type(value)
    if t is float:
        return ("float", value.hex())
    if t in (tuple, list):
        return (t.__name__, [_shape(v) for v in value])
    if isinstance(value, dict):
        return (t.__name__, [(type(k).__name__, k, _shape(v)) for k, v in value.items()])
    return (t.__name__, value)


def _python_capture(value):
    with pure_python():
        return capture_encoded(value)


@settings(max_examples=600, deadline=None)
@given(values | plain_values)
def test_capture_in_c_is_the_python_walks_copy_or_unsupported(value):
    try:
        expected = _python_capture(value)
    except ValueError:  # CaptureError: what the walk refuses, C leaves to it
        with pytest.raises(_speedups.Unsupported):
            _speedups.capture(value)
        return
    try:
        captured, odd = _speedups.capture(value)
    except _speedups.Unsupported:
        return
    assert _shape(captured) == _shape(expected.value)
    assert (odd == 0) == expected.exact_numbers and expected.plain_json
    assert capture_encoded(value) == (captured, expected.stream, True, odd == 0)


def _ascii_keys_and_exact_types(value) -> bool:
    t = type(value)
    if t in (list, tuple):
        return all(_ascii_keys_and_exact_types(v) for v in value)
    if t is dict:
        return all(k.isascii() and _ascii_keys_and_exact_types(v) for k, v in value.items())
    return t in (str, int, float, bool, type(None))


@settings(max_examples=400, deadline=None)
@given(plain_values)
def test_plain_values_with_ascii_keys_are_captured_in_c(value):
    if _ascii_keys_and_exact_types(value):
        captured, _ = _speedups.capture(value)
        assert _shape(captured) == _shape(_python_capture(value).value)


def test_a_captured_session_view_is_made_in_c_and_frozen():
    calls = []
    real = lib.hashing._c_capture
    try:
        lib.hashing._c_capture = lambda v: calls.append(v) or real(v)
        message = {"role": "user", "text": "é" * 40, "id": "m1", "eventIndex": 0, "n": 1e-5}
        got = capture_encoded([message, {"b": [1, 2.5], "a": None}])
    finally:
        lib.hashing._c_capture = real
    assert len(calls) == 1 and got.plain_json and not got.exact_numbers  # 1e-5: orjson differs
    first = got.value[0]
    assert type(got.value) is tuple and type(first) is FrozenDict and list(first) == sorted(message)
    with pytest.raises(TypeError):
        first["role"] = "x"
    assert got == _python_capture([message, {"b": [1, 2.5], "a": None}])

"""Value capture: an immutable canonical copy of plain data, taken once, before hashing.

`capture(value)` copies a value into the canonical form: arrays become tuples, objects
become FrozenDicts (str keys, canonical key order), str/int/float/bool subclasses become
their base types, bytes-likes become bytes, pydantic models are captured through
`model_dump(by_alias=True)`. None, UNDEFINED, HOLE (inside arrays), BigInt and objects
with `__fabric_json__()` (immutable Fabric values such as links) are kept as they are.
Later hashing, measuring and writing all use the captured copy, so mutating the original
cannot make a hash disagree with what is written (spec "Canonical hashes").

`capture_encoded(value)` returns the captured value together with its lib.hashing byte
stream (lib.hashing.encode_value of the copy: the C fast path where it applies, else
the reference walk of lib.hash_stream) and what the copy's JSON text can be. A value of
plain JSON types with ASCII keys (a session's summary and messages) is copied by
lib._speedups.capture, which a test holds equal to the walk here.

Errors are CaptureError with code "cycle", "unsupported-value" or "too-deep".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel

import lib.hashing as _hashing
from lib.errors import CodedError
from lib.frozen import FrozenDict, sorted_keys
from lib.hashing import HOLE, UNDEFINED, BigInt, HashError, Unsupported, encode_value

__all__ = ["CaptureError", "Captured", "capture", "capture_encoded"]


class CaptureError(CodedError, ValueError):
    """A value that has no immutable Fabric form. `code` is stable, `message` is for people."""



def capture(value: Any) -> Any:
    """The immutable canonical copy of value."""
    return capture_encoded(value)[0]


class Captured(NamedTuple):
    value: Any
    stream: bytes
    """The value-hash byte stream: sha256(stream) is lib.hashing.value_hash(value)."""
    plain_json: bool
    """False when the value holds UNDEFINED, HOLE, bytes, a BigInt or a link, which plain
    JSON cannot hold (non-finite floats are left to the JSON encoder to refuse)."""
    exact_numbers: bool
    """True when every float is finite and either 0 or at least 1e-4 in magnitude: the
    numbers orjson writes exactly as json.dumps does (lib.chunking.compact_json)."""


# Values seen that plain JSON cannot hold, and floats orjson writes otherwise than
# json.dumps; read before and after a walk (another thread can only add false alarms).
_non_json = 0
_odd_floats = 0


def _note_non_json() -> None:
    global _non_json
    _non_json += 1


_INF = float("inf")


def _note_float(v: float) -> None:
    global _odd_floats
    if not (1e-4 <= abs(v) < _INF or v == 0.0):  # NaN fails both
        _odd_floats += 1


def capture_encoded(value: Any) -> Captured:
    """The captured value, its value-hash stream, and what its JSON form can be."""
    fast = _hashing._c_capture
    if fast is not None:
        try:
            captured, odd = fast(value)  # plain JSON types only: what the walk below makes
        except Unsupported:
            pass
        else:
            return Captured(captured, encode_value(captured), True, odd == 0)
    non_json_before, odd_before = _non_json, _odd_floats
    try:
        captured = _cap_value(value)
    except RecursionError:
        if _has_cycle(value):
            raise CaptureError("cycle", "value refers to itself; a cycle has no Fabric form") from None
        raise CaptureError("too-deep", "value is nested too deeply to capture") from None
    try:
        stream = encode_value(captured)
    except HashError as exc:
        raise CaptureError(exc.code, exc.message) from None
    return Captured(captured, stream, _non_json == non_json_before, _odd_floats == odd_before)


class _Building(dict):
    """A FrozenDict under construction: same layout, ordinary (fast) item assignment.

    Once filled in canonical order its __class__ becomes FrozenDict, which is cheaper
    than building a list of values and copying it into a FrozenDict.
    """

    __slots__ = ()


def _cap_dict(d: Mapping[Any, Any]) -> FrozenDict:
    try:
        keys = sorted_keys(d)
    except TypeError:
        raise CaptureError("unsupported-value", "object keys must be strings") from None
    out = _Building()
    for k in keys:
        # plain str keys, so the captured FrozenDict never holds a str subclass
        out[k if type(k) is str else str(k)] = _cap_value(d[k])
    out.__class__ = FrozenDict
    return out


def _cap_list(a: Any) -> tuple[Any, ...]:
    out = []
    for v in a:
        if v is HOLE:
            _note_non_json()
            out.append(v)
        else:
            out.append(_cap_value(v))
    return tuple(out)


def _cap_value(v: Any) -> Any:
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return v
    if t is float:
        _note_float(v)
        return v
    if t is dict:
        return _cap_dict(v)
    if t is list or t is tuple:
        return _cap_list(v)
    return _cap_other(v)


def _cap_other(v: Any) -> Any:
    """Everything but exact built-in types: subclasses, models, links, bytes, sentinels."""
    if v is UNDEFINED:
        _note_non_json()
        return v
    if v is HOLE:
        raise CaptureError("unsupported-value", "a hole can only appear inside an array")
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, BigInt):
        _note_non_json()
        return v if type(v) is BigInt else BigInt(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        v = float(v)
        _note_float(v)
        return v
    if isinstance(v, str):
        return str(v)
    if isinstance(v, bytes | bytearray | memoryview):
        _note_non_json()
        return bytes(v)
    if isinstance(v, Mapping):
        return _cap_dict(v)
    if isinstance(v, list | tuple):
        return _cap_list(v)
    if isinstance(v, BaseModel):
        return _cap_value(v.model_dump(by_alias=True))
    if hasattr(v, "__fabric_json__"):
        # An immutable Fabric value (a Link): kept whole, hashed as its JSON form.
        _note_non_json()
        return v
    raise CaptureError("unsupported-value", f"cannot capture a value of type {type(v).__name__}")


def _has_cycle(value: Any) -> bool:
    """Whether value contains itself (an explicit-stack walk, so depth cannot overflow)."""
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, leaving = stack.pop()
        if leaving:
            on_path.discard(id(node))
            continue
        if isinstance(node, Mapping):
            children = list(node.values())
        elif isinstance(node, list | tuple):
            children = list(node)
        else:
            continue
        if id(node) in on_path:
            return True
        on_path.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children)
    return False

"""Value capture: an immutable canonical copy of plain data, taken once, before hashing.

`capture(value)` copies a value into the canonical form: arrays become tuples, objects
become FrozenDicts (str keys, canonical key order), str/int/float/bool subclasses become
their base types, bytes-likes become bytes, pydantic models are captured through
`model_dump(by_alias=True)`. None, UNDEFINED, HOLE (inside arrays), BigInt and objects
with `__fabric_json__()` (immutable Fabric values such as links) are kept as they are.
Later hashing, measuring and writing all use the captured copy, so mutating the original
cannot make a hash disagree with what is written (spec "Canonical hashes").

Capture and the value-hash walk visit the same nodes, so they are fused:
`capture_encoded(value)` returns the captured value together with its lib.hashing byte
stream, in one pass. Preparing a 50 MB session pays for one Python-level walk, not two.

Plain JSON-typed values (exact built-in types, the usual case) are captured by the C
extension (lib._speedups.capture, the same copy and stream in one C walk); every other
value takes the Python walk below.

Errors are CaptureError with code "cycle", "unsupported-value" or "too-deep".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel

import lib.hash_stream as _stream
import lib.hashing as _hashing
from lib.frozen import FrozenDict, sorted_keys
from lib.hash_stream import (  # the fused walk shares the reference encoders and string cache
    _ARRAY,
    _END,
    _FALSE,
    _MAX_SAFE,
    _NAN,
    _NULL,
    _NUM,
    _OBJECT,
    _TRUE,
    _UNDEF,
    HOLE,
    UNDEFINED,
    BigInt,
    HashError,
    _bigint,
    _encode_str,
    _leb128,
    _odd_keys,
    _str_cache,
    _str_miss,
)
from lib.hashing import encode_value

__all__ = ["CaptureError", "Captured", "capture", "capture_encoded"]


class CaptureError(ValueError):
    """A value that has no immutable Fabric form. `code` is stable, `message` is for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def capture(value: Any) -> Any:
    """The immutable canonical copy of value."""
    return capture_encoded(value)[0]


class Captured(NamedTuple):
    value: Any
    stream: bytes
    """The value-hash byte stream: sha256(stream) is lib.hashing.value_hash(value)."""
    ascii_json: bool
    """True when no string holds a character >= U+007F, so the value's ASCII-escaped JSON
    is also its UTF-8 JSON (False may be a false alarm, never the other way round)."""
    plain_json: bool
    """False when the value holds UNDEFINED, HOLE, bytes, a BigInt or a link, which plain
    JSON cannot hold (non-finite floats are left to the JSON encoder to refuse)."""


# Values seen that plain JSON cannot hold; read before and after a walk, like
# lib.hash_stream._wide_strings (another thread can only add false alarms).
_non_json = 0


def _note_non_json() -> None:
    global _non_json
    _non_json += 1


def capture_encoded(value: Any) -> Captured:
    """The captured value, its value-hash stream, and what its JSON form can be."""
    fast = _hashing._c_capture
    if fast is not None:
        try:
            captured, stream, wide = fast(value)
            return Captured(captured, stream, not wide, True)
        except _hashing.Unsupported:
            pass  # not plain JSON through and through: the walk below decides
    buf = bytearray()
    wide_before = _stream._wide_strings
    non_json_before = _non_json
    try:
        captured = _cap_value(value, buf)
    except RecursionError:
        if _has_cycle(value):
            raise CaptureError("cycle", "value refers to itself; a cycle has no Fabric form") from None
        raise CaptureError("too-deep", "value is nested too deeply to capture") from None
    except HashError as exc:
        raise CaptureError(exc.code, exc.message) from None
    return Captured(
        captured, bytes(buf), _stream._wide_strings == wide_before, _non_json == non_json_before
    )


class _Building(dict):
    """A FrozenDict under construction: same layout, ordinary (fast) item assignment.

    Once filled in canonical order its __class__ becomes FrozenDict, which is several
    times cheaper than building a list of values and copying it into a FrozenDict.
    """

    __slots__ = ()


def _cap_dict(d: Mapping[Any, Any], buf: bytearray) -> FrozenDict:
    # The hot loop (with _cap_list): leaf types inline, most frequent first.
    try:
        keys = sorted(d)
    except TypeError:
        raise CaptureError("unsupported-value", "object keys must be strings") from None
    cache = _str_cache
    start = len(buf)
    out = _Building()
    buf += _OBJECT
    for k in keys:
        e = cache.get(k)
        if e is None:
            e = _str_miss(k)
        buf += e
        v = d[k]
        t = type(v)
        if t is str:
            e = cache.get(v)
            if e is None:
                e = _str_miss(v)
            buf += e
        elif t is int:
            buf += _NUM(0x23, v) if -_MAX_SAFE <= v <= _MAX_SAFE else _bigint(v)
        elif t is dict:
            v = _cap_dict(v, buf)
        elif t is list:
            v = _cap_list(v, buf)
        elif v is None:
            buf += _NULL
        elif t is bool:
            buf += _TRUE if v else _FALSE
        elif t is float:
            buf += _NAN if v != v else _NUM(0x23, v)
        else:
            v = _cap_other(v, buf)
        out[k] = v
    buf += _END
    if _odd_keys and not _odd_keys.isdisjoint(keys):
        # a key with a lone surrogate: code point order may differ from UTF-8 order
        ordered = sorted_keys(keys)
        if ordered != keys:
            del buf[start:]
            buf += _OBJECT
            out = _Building()
            for k in ordered:
                buf += _str_miss(k)
                out[k] = _cap_value(d[k], buf)
            buf += _END
    out.__class__ = FrozenDict
    return out


def _cap_list(a: Any, buf: bytearray) -> tuple[Any, ...]:
    cache = _str_cache
    out: list[Any] = []
    append = out.append
    holes = 0
    buf += _ARRAY
    for v in a:
        if holes and v is not HOLE:
            buf += b"\x01" + _leb128(holes)
            holes = 0
        t = type(v)
        if t is dict:
            v = _cap_dict(v, buf)
        elif t is str:
            e = cache.get(v)
            if e is None:
                e = _str_miss(v)
            buf += e
        elif t is int:
            buf += _NUM(0x23, v) if -_MAX_SAFE <= v <= _MAX_SAFE else _bigint(v)
        elif t is list:
            v = _cap_list(v, buf)
        elif v is None:
            buf += _NULL
        elif t is bool:
            buf += _TRUE if v else _FALSE
        elif t is float:
            buf += _NAN if v != v else _NUM(0x23, v)
        elif v is HOLE:
            holes += 1
            _note_non_json()
        else:
            v = _cap_other(v, buf)
        append(v)
    if holes:
        buf += b"\x01" + _leb128(holes)
    buf += _END
    return tuple(out)


def _cap_value(v: Any, buf: bytearray) -> Any:
    t = type(v)
    if t is dict:
        return _cap_dict(v, buf)
    if t is list:
        return _cap_list(v, buf)
    if t is str:
        buf += _encode_str(v)
        return v
    return _cap_other(v, buf)


def _cap_other(v: Any, buf: bytearray) -> Any:
    """Everything the inline fast paths do not cover: subclasses, tuples, models, links."""
    global _non_json
    if v is None:
        buf += _NULL
        return None
    if v is UNDEFINED:
        _non_json += 1
        buf += _UNDEF
        return v
    if v is HOLE:
        raise CaptureError("unsupported-value", "a hole can only appear inside an array")
    if isinstance(v, bool):
        buf += _TRUE if v else _FALSE
        return bool(v)
    if isinstance(v, BigInt):
        _non_json += 1
        buf += _bigint(int(v))
        return v if type(v) is BigInt else BigInt(v)
    if isinstance(v, int):
        v = int(v)
        buf += _NUM(0x23, v) if -_MAX_SAFE <= v <= _MAX_SAFE else _bigint(v)
        return v
    if isinstance(v, float):
        v = float(v)
        buf += _NAN if v != v else _NUM(0x23, v)
        return v
    if isinstance(v, str):
        v = str(v)
        buf += _encode_str(v)
        return v
    if isinstance(v, bytes | bytearray | memoryview):
        _non_json += 1
        raw = bytes(v)
        buf += b"\x25" + _leb128(len(raw)) + raw
        return raw
    if isinstance(v, Mapping):
        # plain str keys, so the captured FrozenDict never holds a str subclass
        return _cap_dict({str(k) if isinstance(k, str) else k: x for k, x in v.items()}, buf)
    if isinstance(v, list | tuple):
        return _cap_list(v, buf)
    if isinstance(v, BaseModel):
        return _cap_value(v.model_dump(by_alias=True), buf)
    if hasattr(v, "__fabric_json__"):
        # An immutable Fabric value (a Link): kept whole, hashed as its JSON form.
        _non_json += 1
        buf += encode_value(v)
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

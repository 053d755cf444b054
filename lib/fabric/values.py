"""Fabric values in JSON: links and the tagged `fvj1` encoding (DESIGN.md).

Value model (shared with lib.hashing): None (null), UNDEFINED, bool, int or
float (an int beyond 2**53, or a `BigInt`, is a bigint), str, bytes, list or
tuple (HOLE marks a sparse-array hole), dict or Mapping with str keys, Link.

Plain JSON is written as itself. What JSON cannot hold becomes a single-key
tagged object: `{"/Undefined@1": null}`, `{"/BigInt@1": "<base64url>"}`,
`{"/SpecialNumber@1": "-0"|"NaN"|"+Infinity"|"-Infinity"}`,
`{"/Bytes@1": "<base64url>"}`, and (our choice, DESIGN.md is silent) one
`{"/Hole@1": null}` per array hole. An object with a key starting with "/" is
escaped: `{"/quote": obj}` when its whole subtree is plain JSON, otherwise
`{"/object": {key: encoded}}`. A Link is written as the quote of its JSON form
and a quoted object in exactly that form decodes as a Link; a bare
`{"/": {"link@1": ...}}` is also read as a Link, for other writers.

Plain data is the common case (a big session is 50 MB of events): encode
walks it once and returns the very same objects when nothing needs a tag,
copying only the containers on the path to a tagged value. lib._cells
(cell_speedups.py) does that walk in C for plain JSON, Links, UNDEFINED and
HOLE; `encode_reference` below is the same in Python, and runs for the rest.

This module writes fvj1; value_decoding.py reads it (`loads`, `decode`,
`from_fvj1_string`).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from lib.errors import CodedError
from lib.fabric.cell_speedups import CELLS, Unsupported
from lib.frozen import FrozenDict
from lib.hashing import HOLE, UNDEFINED, BigInt

PREFIX = "fvj1:"
_MAX_SAFE = 2**53
_copysign = math.copysign


class ValueEncodingError(CodedError, ValueError):
    """A value outside the model, or text that is not fvj1. `code` is stable."""



@dataclass(frozen=True, slots=True)
class Link:
    """A link to (a path inside) a cell: `{"/": {"link@1": {id, path, space}}}`."""

    id: str
    space: str
    path: tuple[str | int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.startswith("of:"):
            raise ValueEncodingError("invalid-link", f"a link id starts with 'of:': {self.id!r}")
        if not isinstance(self.space, str) or not self.space:
            raise ValueEncodingError("invalid-link", f"a link space is a DID: {self.space!r}")
        path = tuple(self.path)
        for step in path:
            if type(step) is not str and (type(step) is not int or step < 0):
                raise ValueEncodingError(
                    "invalid-link", f"a link path holds keys and indexes: {step!r}"
                )
        object.__setattr__(self, "path", path)

    @classmethod
    def trusted(cls, id: str, space: str) -> Link:
        """A link at no path whose ID and space the caller made (the planner's links to
        the cells it names), without checking them again."""
        link = object.__new__(cls)
        object.__setattr__(link, "id", id)
        object.__setattr__(link, "space", space)
        object.__setattr__(link, "path", ())
        return link

    def to_json(self) -> dict[str, Any]:
        return {"/": {"link@1": {"id": self.id, "path": list(self.path), "space": self.space}}}

    # lib.hashing hashes any object by this method's result: a link hashes as its JSON form
    __fabric_json__ = to_json

    @staticmethod
    def from_json(obj: Any) -> Link | None:
        """The Link obj is the JSON form of, or None when it has any other shape."""
        if type(obj) is not dict or len(obj) != 1:
            return None
        inner = obj.get("/")
        if type(inner) is not dict or len(inner) != 1:
            return None
        body = inner.get("link@1")
        if type(body) is not dict or body.keys() != {"id", "path", "space"}:
            return None
        if type(body["path"]) is not list:
            return None
        try:
            return Link(body["id"], body["space"], tuple(body["path"]))
        except ValueEncodingError:
            return None


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _bigint_tag(n: int) -> dict[str, str]:
    width = ((n if n >= 0 else ~n).bit_length() + 8) // 8
    return {"/BigInt@1": _b64(int(n).to_bytes(width, "big", signed=True))}


def _special_tag(v: float) -> dict[str, str]:
    if v != v:
        name = "NaN"
    elif v == math.inf:
        name = "+Infinity"
    elif v == -math.inf:
        name = "-Infinity"
    else:
        name = "-0"
    return {"/SpecialNumber@1": name}


_UNDEFINED_TAG = {"/Undefined@1": None}
_HOLE_TAG = {"/Hole@1": None}


def encode(value: Any) -> Any:
    """The JSON-compatible fvj1 form of value (value itself when it is plain JSON)."""
    if _fast_encode is not None:
        try:
            return _fast_encode(value)
        except Unsupported:
            pass
    return encode_reference(value)


def encode_reference(value: Any) -> Any:
    """encode in Python: what lib._cells.fvj1_encode must equal, and what runs for the
    values it leaves (tags other than UNDEFINED and HOLE, escapes, subclasses)."""
    try:
        return _enc(value)
    except RecursionError:
        raise ValueEncodingError("too-deep", "value is nested too deeply to encode") from None


def _enc(v: Any) -> Any:
    t = type(v)
    if t is dict:
        return _enc_dict(v)
    if t is list or t is tuple:
        return _enc_list(v)
    if t is str or t is bool or v is None:
        return v
    if t is int:
        return v if -_MAX_SAFE <= v <= _MAX_SAFE else _bigint_tag(v)
    if t is float:
        return v if v - v == 0.0 and (v or _copysign(1.0, v) > 0) else _special_tag(v)
    return _enc_other(v)


def _enc_other(v: Any) -> Any:
    if v is UNDEFINED:
        return _UNDEFINED_TAG
    if v is HOLE:
        raise ValueEncodingError("unsupported-value", "a hole can only appear inside an array")
    if isinstance(v, Link):
        return {"/quote": v.to_json()}
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, BigInt):
        return _bigint_tag(v)
    if isinstance(v, int):
        return _enc(int(v))
    if isinstance(v, float):
        return _enc(float(v))
    if isinstance(v, str):
        return str.__str__(v)  # str(v) of a (str, Enum) member is its qualified name
    if isinstance(v, bytes | bytearray | memoryview):
        return {"/Bytes@1": _b64(bytes(v))}
    if isinstance(v, Mapping):
        return _enc_dict(dict(v))
    if isinstance(v, list | tuple):
        return _enc_list(list(v))
    method = getattr(v, "__fabric_json__", None)
    if method is not None:
        return _enc(method())
    raise ValueEncodingError(
        "unsupported-value", f"cannot encode a value of type {type(v).__name__}"
    )


def _enc_dict(d: dict[Any, Any]) -> Any:
    changed: dict[str, Any] | None = None
    for k, v in d.items():
        if type(k) is not str and not isinstance(k, str):
            raise ValueEncodingError(
                "unsupported-value", f"object keys are strings, not {type(k).__name__}"
            )
        if k[:1] == "/":
            return _escape(d)
        t = type(v)
        if t is str or t is bool or v is None:
            continue
        if t is int:
            if -_MAX_SAFE <= v <= _MAX_SAFE:
                continue
            e = _bigint_tag(v)
        elif t is float:
            if v - v == 0.0 and (v or _copysign(1.0, v) > 0):
                continue
            e = _special_tag(v)
        elif t is dict:
            e = _enc_dict(v)
        elif t is list or t is tuple:
            e = _enc_list(v)
        else:
            e = _enc_other(v)
        if e is not v:
            if changed is None:
                changed = {}
            changed[k] = e
    if changed is None:
        return d
    return {k: changed[k] if k in changed else v for k, v in d.items()}


def _enc_list(a: list[Any] | tuple[Any, ...]) -> Any:
    changed: dict[int, Any] | None = None
    for i, v in enumerate(a):
        t = type(v)
        if t is str or t is bool or v is None:
            continue
        if t is dict:
            e = _enc_dict(v)
        elif t is int:
            if -_MAX_SAFE <= v <= _MAX_SAFE:
                continue
            e = _bigint_tag(v)
        elif t is float:
            if v - v == 0.0 and (v or _copysign(1.0, v) > 0):
                continue
            e = _special_tag(v)
        elif t is list or t is tuple:
            e = _enc_list(v)
        elif v is HOLE:
            e = _HOLE_TAG
        else:
            e = _enc_other(v)
        if e is not v:
            if changed is None:
                changed = {}
            changed[i] = e
    if changed is None:
        return a
    return [changed[i] if i in changed else v for i, v in enumerate(a)]


def _escape(d: dict[str, Any]) -> dict[str, Any]:
    """An object with a '/'-prefixed key: quoted when plain JSON, else field by field."""
    if _is_plain(d):
        return {"/quote": d}
    return {"/object": {k: _enc(v) for k, v in d.items()}}


def _is_plain(v: Any) -> bool:
    t = type(v)
    if t is str or t is bool or v is None:
        return True
    if t is int:
        return -_MAX_SAFE <= v <= _MAX_SAFE
    if t is float:
        return v - v == 0.0 and bool(v or _copysign(1.0, v) > 0)
    if t is dict:
        return all(type(k) is str and _is_plain(x) for k, x in v.items())
    if t is list or t is tuple:
        return all(_is_plain(x) for x in v)
    return False


_fast_encode = None
if CELLS is not None:
    CELLS.set_types(Link, FrozenDict, HOLE, UNDEFINED, _HOLE_TAG, _UNDEFINED_TAG)
    _fast_encode = CELLS.fvj1_encode


def dumps(value: Any) -> str:
    """The fvj1 JSON text of value, compact, key order kept, by orjson (UTF-8); what it
    refuses (a lone surrogate, a str subclass key) by json.dumps, ASCII-escaped. Every
    such text, and the all-ASCII text of earlier versions, parses to the same value."""
    encoded = encode(value)  # no NaN, no int beyond 2**53, no cycle (too deep) left
    try:
        return orjson.dumps(encoded).decode("utf-8")
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(encoded, separators=(",", ":"), allow_nan=False, check_circular=False)


def to_fvj1_string(value: Any) -> str:
    """`fvj1:` + the fvj1 JSON text: a Fabric value held in a string."""
    return PREFIX + dumps(value)

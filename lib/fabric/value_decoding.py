"""Reading fvj1: the value an fvj1 JSON object or text stands for (values.py writes it).

Tags, escapes and links are as values.py's docstring says. Untagged data is the common
case: `decode` walks it once and returns the very same objects when nothing is tagged,
copying only the containers on the path to a tagged value. `loads` parses with orjson
first and falls back to json.loads only for what orjson refuses.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any

import orjson

from lib.fabric.values import _MAX_SAFE, PREFIX, Link, ValueEncodingError
from lib.hashing import HOLE, UNDEFINED, BigInt


def _unb64(text: Any, tag: str) -> bytes:
    if type(text) is not str:
        raise ValueEncodingError("invalid-fvj1", f"{tag} holds a base64url string")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise ValueEncodingError("invalid-fvj1", f"{tag} is not base64url: {text[:40]!r}") from None


def decode(obj: Any) -> Any:
    """The value an fvj1 JSON-compatible object stands for (obj itself when untagged)."""
    try:
        return _dec(obj)
    except RecursionError:
        raise ValueEncodingError("too-deep", "value is nested too deeply to decode") from None


def _dec(v: Any) -> Any:
    t = type(v)
    if t is dict:
        return _dec_dict(v)
    if t is list:
        return _dec_list(v)
    return v


def _dec_dict(d: dict[str, Any]) -> Any:
    changed: dict[str, Any] | None = None
    for k, v in d.items():
        if k[:1] == "/":
            if len(d) != 1:
                raise ValueEncodingError(
                    "invalid-fvj1", f"an object mixes the tag {k!r} with other keys"
                )
            return _untag(k, v)
        t = type(v)
        if t is dict:
            e = _dec_dict(v)
        elif t is list:
            e = _dec_list(v)
        else:
            continue
        if e is not v:
            if changed is None:
                changed = {}
            changed[k] = e
    if changed is None:
        return d
    return {k: changed[k] if k in changed else v for k, v in d.items()}


def _dec_list(a: list[Any]) -> Any:
    changed: dict[int, Any] | None = None
    for i, v in enumerate(a):
        t = type(v)
        if t is dict:
            e = _dec_dict(v)
        elif t is list:
            e = _dec_list(v)
        else:
            continue
        if e is not v:
            if changed is None:
                changed = {}
            changed[i] = e
    if changed is None:
        return a
    return [changed[i] if i in changed else v for i, v in enumerate(a)]


_SPECIALS = {"-0": -0.0, "NaN": math.nan, "+Infinity": math.inf, "-Infinity": -math.inf}


def _untag(tag: str, body: Any) -> Any:
    if tag == "/quote":
        if type(body) is not dict:
            raise ValueEncodingError("invalid-fvj1", "/quote holds an object")
        link = Link.from_json(body)
        return body if link is None else link
    if tag == "/object":
        if type(body) is not dict:
            raise ValueEncodingError("invalid-fvj1", "/object holds an object")
        return {k: _dec(v) for k, v in body.items()}
    if tag == "/Undefined@1":
        return UNDEFINED
    if tag == "/Hole@1":
        return HOLE
    if tag == "/BigInt@1":
        n = int.from_bytes(_unb64(body, tag), "big", signed=True)
        # a bigint small enough to pass for a number keeps its type
        return BigInt(n) if -_MAX_SAFE <= n <= _MAX_SAFE else n
    if tag == "/SpecialNumber@1":
        if body not in _SPECIALS:
            raise ValueEncodingError("invalid-fvj1", f"unknown special number {body!r}")
        return _SPECIALS[body]
    if tag == "/Bytes@1":
        return _unb64(body, tag)
    if tag == "/":
        link = Link.from_json({"/": body})
        if link is not None:
            return link
    raise ValueEncodingError("invalid-fvj1", f"unknown fvj1 tag {tag!r}")


def _reject_constant(name: str) -> Any:
    raise ValueEncodingError(
        "invalid-fvj1", f"{name} is not JSON; fvj1 writes it as /SpecialNumber@1"
    )


def loads(text: str | bytes, keep: frozenset[str] = frozenset()) -> Any:
    """The value of fvj1 JSON text.

    orjson parses what it can (most text: faster, and its object keys are shared
    between values, which keeps many decoded rows small); what it refuses (an int
    beyond 64 bits, a lone surrogate escape, NaN, anything malformed) goes to json.loads,
    which reads the same text as the same value or raises the error below.

    A field named in `keep` of a top-level object is left as its fvj1 JSON, not decoded
    (`decode_keeping`)."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            obj = json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise ValueEncodingError(
                "invalid-fvj1", f"not JSON: {exc.msg} at offset {exc.pos}"
            ) from None
    return decode_keeping(obj, keep) if keep else decode(obj)


def decode_keeping(obj: Any, keep: frozenset[str]) -> Any:
    """`decode(obj)`, but a field of a plain top-level object named in `keep` is left as
    its fvj1 JSON (tags and all): the store reads a prior index row so, without making a
    Link for each of its twelve preview links (issue 14 goal 3). Anything else (not an
    object, a tagged object, no such field) decodes as `decode` does."""
    if type(obj) is not dict or not any(k in obj for k in keep) or any(k[:1] == "/" for k in obj):
        return decode(obj)
    decoded = decode({k: v for k, v in obj.items() if k not in keep})
    return {k: obj[k] if k in keep else decoded[k] for k in obj}


def from_fvj1_string(text: str) -> Any:
    if not text.startswith(PREFIX):
        raise ValueEncodingError("invalid-fvj1", f"an fvj1 string starts with {PREFIX!r}")
    return loads(text[len(PREFIX) :])

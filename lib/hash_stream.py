"""The value-hash byte stream in pure Python: the reference walk (DESIGN.md "Values and
hashes"), and the value model's own types (UNDEFINED, HOLE, BigInt, Encoded, HashError).

lib.hashing is the public face: it runs the C extension (lib/_speedups.c) for plain
values and this walk for everything else. The walk is written for CPython: leaf types
are handled inline in the container loops instead of one call per value, short strings
(keys repeat a lot) have their encodings cached, and the whole stream goes into one
bytearray that is hashed once.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Mapping
from typing import Any

from lib.errors import CodedError
from lib.frozen import FrozenDict, has_surrogate, sorted_keys, utf8


class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name

    def __copy__(self) -> _Sentinel:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Sentinel:
        return self


UNDEFINED = _Sentinel("UNDEFINED")
"""JavaScript `undefined`: a value distinct from None (null)."""

HOLE = _Sentinel("HOLE")
"""A sparse-array hole; only meaningful as an element of a list or tuple."""


class BigInt(int):
    """An int that is always hashed as a bigint (JavaScript `42n`), whatever its size.

    Plain ints beyond 2**53 are bigints anyway; this marks small ones (fvj1 `/BigInt@1`).
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"BigInt({int(self)})"


class Encoded:
    """A subtree given by its value-hash byte stream (from encode_value or capture).

    Lets a caller hash a structure around parts it has already encoded without walking
    them again: value_hash({"a": Encoded(encode_value(x))}) == value_hash({"a": x}).
    """

    __slots__ = ("stream",)

    def __init__(self, stream: bytes) -> None:
        self.stream = bytes(stream)


class HashError(CodedError, TypeError):
    """A value outside the hashable model. `code` is stable, `message` is for people."""



_MAX_SAFE = 2**53
_SHORT_LIMIT = 64
_CACHE_LIMIT = 1 << 16
_NUM = struct.Struct(">Bd").pack
_NAN = b"\x23\x7f\xf8\x00\x00\x00\x00\x00\x00"
_NULL = b"\x20"
_UNDEF = b"\x21"
_FALSE = b"\x22\x00"
_TRUE = b"\x22\x01"
_ARRAY = b"\x10"
_OBJECT = b"\x11"
_END = b"\x00"
_LONG = b"\xf0"
_sha256 = hashlib.sha256

try:
    from lib import _speedups
except ImportError:  # built without a compiler: the reference walk does everything
    _speedups = None
_fabric_types: set[type] = set()  # registered with the C walk (see _enc_other)

# Encodings of strings of at most _SHORT_LIMIT characters: keys and enum-like values
# repeat a lot; longer strings are mostly unique text and are not cached.
_str_cache: dict[str, bytes] = {}
# Strings seen holding a lone surrogate: as keys they may need UTF-8 order, not str order.
_odd_keys: set[str] = set()


def _leb128(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SHORT_PREFIX = tuple(b"\x24" + _leb128(n) for n in range(_SHORT_LIMIT + 1))


def _encode_str(s: str) -> bytes:
    """Encoding of any str (no caching)."""
    if s.isascii():
        raw = s.encode("ascii")
        n = len(raw)
        return _SHORT_PREFIX[n] + raw if n <= _SHORT_LIMIT else _LONG + _sha256(raw).digest()
    return _encode_wide(s)


def _encode_wide(s: str) -> bytes:
    if has_surrogate(s):
        if len(_odd_keys) > 4096:
            _odd_keys.clear()  # safe: a wide string is re-added each time it is encoded
        _odd_keys.add(s)
    raw = utf8(s)
    n = len(raw)
    return _SHORT_PREFIX[n] + raw if n <= _SHORT_LIMIT else _LONG + _sha256(raw).digest()


def _str_miss(s: Any) -> bytes:
    """Encoding of a string or key not in the cache; caches short ASCII ones.

    Only ASCII strings are cached, so every wide string passes through _encode_wide.
    """
    if type(s) is not str:
        if not isinstance(s, str):
            raise HashError("unsupported-value", f"object keys must be strings, not {type(s).__name__}")
        s = str(s)
    if s.isascii():
        raw = s.encode("ascii")
        n = len(raw)
        if n > _SHORT_LIMIT:
            return _LONG + _sha256(raw).digest()
        enc = _SHORT_PREFIX[n] + raw
        if len(_str_cache) >= _CACHE_LIMIT:
            _str_cache.clear()
        _str_cache[s] = enc
        return enc
    return _encode_wide(s)


def _bigint(n: int) -> bytes:
    width = ((n if n >= 0 else ~n).bit_length() + 8) // 8
    return b"\x26" + _leb128(width) + n.to_bytes(width, "big", signed=True)


def _enc_float(v: float) -> bytes:
    return _NAN if v != v else _NUM(0x23, v)


def _enc_dict(d: Mapping[Any, Any], buf: bytearray) -> None:
    if type(d) is FrozenDict:  # already in canonical key order
        _enc_frozen(d, buf)
        return
    try:
        keys = sorted(d)
    except TypeError:
        raise HashError("unsupported-value", "object keys must be strings") from None
    start = len(buf)
    _enc_keys(d, keys, buf)
    if _odd_keys and not _odd_keys.isdisjoint(keys):
        # a key with a lone surrogate: code point order may differ from UTF-8 order
        ordered = sorted_keys(keys)
        if ordered != keys:
            del buf[start:]
            _enc_keys(d, ordered, buf)


def _enc_frozen(d: FrozenDict, buf: bytearray) -> None:
    # items() of a presorted FrozenDict is already in canonical key order
    _enc_pairs(d.items(), buf)


def _enc_keys(d: Mapping[Any, Any], keys: list[Any], buf: bytearray) -> None:
    _enc_pairs(((k, d[k]) for k in keys), buf)


def _enc_pairs(pairs: Iterable[tuple[Any, Any]], buf: bytearray) -> None:
    """An object's key/value pairs, given in canonical order."""
    cache = _str_cache
    buf += _OBJECT
    for k, v in pairs:
        e = cache.get(k)
        if e is None:
            e = _str_miss(k)
        buf += e
        _enc_value(v, buf)
    buf += _END


def _enc_list(a: Any, buf: bytearray) -> None:
    buf += _ARRAY
    holes = 0
    for v in a:
        if v is HOLE:
            holes += 1
            continue
        if holes:
            buf += b"\x01" + _leb128(holes)
            holes = 0
        _enc_value(v, buf)
    if holes:
        buf += b"\x01" + _leb128(holes)
    buf += _END


def _enc_other(v: Any, buf: bytearray) -> None:
    """Everything the inline fast paths do not cover, including subclasses."""
    if type(v) is Encoded:
        buf += v.stream
    elif v is None:
        buf += _NULL
    elif v is UNDEFINED:
        buf += _UNDEF
    elif v is HOLE:
        raise HashError("unsupported-value", "a hole can only appear inside an array")
    elif isinstance(v, bool):
        buf += _TRUE if v else _FALSE
    elif isinstance(v, BigInt):
        buf += _bigint(int(v))
    elif isinstance(v, int):
        v = int(v)
        buf += _NUM(0x23, v) if -_MAX_SAFE <= v <= _MAX_SAFE else _bigint(v)
    elif isinstance(v, float):
        buf += _enc_float(float(v))
    elif isinstance(v, str):
        buf += _encode_str(str(v))
    elif isinstance(v, bytes | bytearray | memoryview):
        raw = bytes(v)
        buf += b"\x25" + _leb128(len(raw)) + raw
    elif isinstance(v, Mapping):
        _enc_dict(v, buf)
    elif isinstance(v, list | tuple):
        _enc_list(v, buf)
    else:
        method = getattr(v, "__fabric_json__", None)
        if method is None:
            raise HashError("unsupported-value", f"cannot hash a value of type {type(v).__name__}")
        if _speedups is not None and type(v) not in _fabric_types:
            # Every object of exactly this type takes this branch, so the C walk may
            # call __fabric_json__ itself from now on (links are everywhere in graphs).
            _fabric_types.add(type(v))
            _speedups.add_fabric_type(type(v))
        _enc_value(method(), buf)


def _enc_value(v: Any, buf: bytearray) -> None:
    """One value. Exact built-in types first, most frequent first (the reference walk's
    one hot dispatch); everything else, subclasses included, in _enc_other."""
    t = type(v)
    if t is str:
        e = _str_cache.get(v)
        buf += e if e is not None else _str_miss(v)
    elif t is int:
        buf += _NUM(0x23, v) if -_MAX_SAFE <= v <= _MAX_SAFE else _bigint(v)
    elif t is FrozenDict:
        _enc_frozen(v, buf)
    elif t is dict:
        _enc_dict(v, buf)
    elif t is list or t is tuple:
        _enc_list(v, buf)
    elif v is None:
        buf += _NULL
    elif t is bool:
        buf += _TRUE if v else _FALSE
    elif t is float:
        buf += _NAN if v != v else _NUM(0x23, v)
    else:
        _enc_other(v, buf)


def _encode_into(value: Any, buf: bytearray) -> None:
    try:
        _enc_value(value, buf)
    except RecursionError:
        raise HashError("too-deep", "value is nested too deeply to hash") from None


def clear_string_cache() -> None:
    """Drop cached string encodings (after a large walk: cached strings are the walked
    value's own objects, and a few of them can keep much of its freed memory resident)."""
    _str_cache.clear()

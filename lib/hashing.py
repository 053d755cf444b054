"""Common Fabric value hashes: SHA-256 over a type-tagged byte stream (DESIGN.md).

Python value model: None, UNDEFINED, bool, int (a float64 number when |n| <= 2**53, a
bigint beyond), float, str, bytes, list/tuple (HOLE marks a sparse-array hole), dict or
any Mapping with str keys, and any object with `__fabric_json__()` (hashed as the value
that method returns, e.g. a Fabric link).

Speed matters (every session event and every cell is hashed). The C extension
lib._speedups encodes plain JSON-typed values (see lib/_speedups.c) and raises its
Unsupported for anything else, which is then encoded by the pure-Python reference walk
(lib/hash_stream.py): results are the reference's in every case. Without a compiler the
extension is simply absent, and AGENTCTL_PURE_PYTHON=1 (any value but "" or "0") turns
it off.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from lib.frozen import FrozenDict, sorted_keys
from lib.hash_stream import (
    _ARRAY,
    _END,
    _OBJECT,
    HOLE,
    UNDEFINED,
    BigInt,
    Encoded,
    HashError,
    _enc_value,
    _encode_into,
    _speedups,
    clear_string_cache,
)

__all__ = [
    "HOLE",
    "UNDEFINED",
    "BigInt",
    "Encoded",
    "HashError",
    "Unsupported",
    "clear_string_cache",
    "content_hash",
    "digest_to_content_hash",
    "encode_value",
    "object_hash",
    "speedups_available",
    "use_speedups",
    "value_hash",
    "value_hash_with_elements",
]

_sha256 = hashlib.sha256

Unsupported: type[Exception] = _speedups.Unsupported if _speedups is not None else Exception
"""What the C functions raise for a value outside their plain-JSON fast path."""

# The C entry points while enabled, else None; other modules read these at call time.
_c_encode: Any = None
_c_encode_json: Any = None  # the stream of a value orjson writes exactly (lib.chunking)
_c_capture: Any = None  # lib.canonical's capture of a plain value


def speedups_available() -> bool:
    """Whether the C extension was built and imports."""
    return _speedups is not None


def use_speedups(enabled: bool) -> bool:
    """Turn the C fast path on or off (tests run both); returns whether it is now on."""
    global _c_encode, _c_encode_json, _c_capture
    on = enabled and _speedups is not None
    _c_encode = _speedups.encode if on else None
    _c_encode_json = _speedups.encode_json if on else None
    _c_capture = _speedups.capture if on else None
    return on


if _speedups is not None:
    _speedups.set_frozen_type(FrozenDict)
use_speedups(os.environ.get("AGENTCTL_PURE_PYTHON", "") in ("", "0"))


def encode_value(value: Any) -> bytes:
    """The type-tagged byte stream whose SHA-256 is the value hash."""
    if _c_encode is not None:
        try:
            return _c_encode(value)
        except Unsupported:
            pass
    buf = bytearray()
    _encode_into(value, buf)
    return bytes(buf)


def value_hash(value: Any) -> bytes:
    """Raw 32-byte SHA-256 value hash (Common Fabric compatible)."""
    if _c_encode is not None:
        try:
            return _sha256(_c_encode(value)).digest()
        except Unsupported:
            pass
    buf = bytearray()
    _encode_into(value, buf)
    return _sha256(buf).digest()


def digest_to_content_hash(digest: bytes) -> str:
    return "sha256:" + digest.hex()


def content_hash(value: Any) -> str:
    """`sha256:` + lowercase hex of the value hash (the spec's contentHash form)."""
    return "sha256:" + value_hash(value).hex()


def object_hash(fields: Any) -> str:
    """content_hash(fields) for an object (str keys) whose values may be Encoded streams.

    The object's stream is fed to one SHA-256 piece by piece: each key and value encoded
    on its own (in C for plain values), an Encoded value spliced in as it is, so a large
    stream made earlier (a session's captured messages) is neither walked again nor copied
    into a larger one, as the general walk would do.
    """
    try:
        keys = sorted_keys(fields)
    except TypeError:
        raise HashError("unsupported-value", "object keys must be strings") from None
    hasher = _sha256(_OBJECT)
    for key in keys:
        value = fields[key]
        hasher.update(encode_value(key))
        hasher.update(value.stream if type(value) is Encoded else encode_value(value))
    hasher.update(_END)
    return "sha256:" + hasher.hexdigest()


def value_hash_with_elements(array: Any) -> tuple[bytes, list[bytes]]:
    """Hash an array and each of its elements in one walk.

    Returns (hash of the array, [hash of element i]). The elements are encoded once into
    one buffer; each element's hash is taken over its slice, the array's over the whole.
    Holes are not allowed here: a stable array has a value in every cell.
    """
    if not isinstance(array, list | tuple):
        raise HashError("unsupported-value", "value_hash_with_elements needs an array")
    buf = bytearray(_ARRAY)
    bounds = []
    fast = _c_encode
    try:
        for v in array:
            if v is HOLE:
                raise HashError("unsupported-value", "holes have no element hash")
            start = len(buf)
            if fast is not None:
                try:
                    buf += fast(v)
                    bounds.append((start, len(buf)))
                    continue
                except Unsupported:
                    pass
            _enc_value(v, buf)
            bounds.append((start, len(buf)))
    except RecursionError:
        raise HashError("too-deep", "value is nested too deeply to hash") from None
    buf += _END
    view = memoryview(buf)
    elements = [_sha256(view[a:b]).digest() for a, b in bounds]
    whole = _sha256(view).digest()
    view.release()
    return whole, elements

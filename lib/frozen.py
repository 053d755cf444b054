"""FrozenDict: the immutable object type of captured canonical values.

A dict subclass, so the JSON encoders (orjson, json), pydantic and every `isinstance(v, dict)` reader
take it as it is. Its keys are always str and always in canonical order (UTF-8 byte
order, which is code point order except around lone surrogates), so hashing never sorts
it again and its JSON text is deterministic. Mutating methods raise TypeError.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["FrozenDict", "has_surrogate", "sorted_keys", "utf8"]


def utf8(s: str) -> bytes:
    """UTF-8 bytes of s, writing a lone surrogate as U+FFFD the way JavaScript does."""
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def has_surrogate(s: str) -> bool:
    return not s.isascii() and any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def sorted_keys(keys: Iterable[Any]) -> list[str]:
    """Keys in canonical order. Raises TypeError for a key that is not a str."""
    try:
        out = sorted(keys)
        # join doubles as the type check; ASCII keys (nearly all) need nothing more
        if "".join(out).isascii():
            return out
    except TypeError:
        bad = next((k for k in keys if not isinstance(k, str)), None)
        raise TypeError(f"object keys must be strings, not {type(bad).__name__}") from None
    if any(has_surrogate(k) for k in out):
        out.sort(key=utf8)
    return out


class FrozenDict(dict):
    """An immutable str-keyed mapping whose iteration order is canonical key order."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        source = dict(*args, **kwargs)
        dict.__init__(self, [(str(k), source[k]) for k in sorted_keys(source)])

    @classmethod
    def _adopt_sorted(cls, pairs: Iterable[tuple[str, Any]]) -> FrozenDict:
        """Build from pairs already in canonical order (the capture walk's fast path)."""
        obj = dict.__new__(cls)
        dict.__init__(obj, pairs)
        return obj

    def _immutable(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a captured FrozenDict cannot be changed")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _immutable
    __ior__ = _immutable

    def copy(self) -> FrozenDict:
        return self

    def __copy__(self) -> FrozenDict:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __or__(self, other: Any) -> FrozenDict:
        if not isinstance(other, dict):
            return NotImplemented
        return FrozenDict({**self, **other})

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

"""A row's message previews held packed while a publication runs (issue 14, memory).

A session row keeps its last twelve normalized messages (`recentMessages`), most of
its size: held as plain dicts, a publication of 25,000 sessions kept about 15 KB per
row alive (and with them the snapshot's strings). `PackedPreviews` holds the same list
as zlib-compressed fvj1 text and gives it back, exactly, when a row is planned into
cells or hashed; the other row fields (status, times, links) stay plain, so every rule
that decides a row's fate reads it as before.

Only rows in memory are packed: the planner never sees a `PackedPreviews`
(`unpacked_row` first), and a value hash of a packed row is that of the plain row
(`__fabric_json__`, which lib.hashing and lib.fabric.values honour).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from lib.fabric import values

FIELD = "recentMessages"


class PackedPreviews:
    __slots__ = ("_packed",)

    def __init__(self, messages: Sequence[Any]) -> None:
        self._packed = zlib.compress(values.dumps(list(messages)).encode("utf-8"), 1)

    def unpack(self) -> list[Any]:
        return values.loads(zlib.decompress(self._packed))

    # lib.hashing and lib.fabric.values take an object by this method's result
    __fabric_json__ = unpack

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedPreviews):
            return self._packed == other._packed
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._packed)

    def __len__(self) -> int:
        return len(self.unpack())

    def __repr__(self) -> str:
        return f"PackedPreviews({len(self._packed)} bytes)"


def packed_row(row: dict[str, Any]) -> dict[str, Any]:
    """`row` itself with its previews packed (a list, or already packed, or absent)."""
    previews = row.get(FIELD)
    if isinstance(previews, list | tuple):
        row[FIELD] = PackedPreviews(previews)
    return row


def unpacked_row(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The plain row (a copy when its previews were packed, else `row` itself)."""
    previews = row.get(FIELD)
    if type(previews) is PackedPreviews:
        return {**row, FIELD: previews.unpack()}
    return row

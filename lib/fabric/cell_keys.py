"""How the SQLite store keeps a cell ID in its `cell_id` column (schema version 2).

A content-derived ID (`of:fid1:` and 43 characters of unpadded base64url naming a
32-byte hash, the form cell_id.cell_id makes) is kept as those 32 bytes, a BLOB: it
is stored twice (the row and its primary key), and the text is 51 bytes. Any other
ID stays TEXT as it is. SQLite never takes a BLOB equal to a TEXT, so the two forms
cannot collide, and `cell` gives back the very ID that `key` was given.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Iterable
from operator import itemgetter
from typing import Protocol, TypeVar

from lib.fabric.cell_speedups import CELLS

_PREFIX = "of:fid1:"
_LENGTH = len(_PREFIX) + 43
_CANONICAL = re.compile(re.escape(_PREFIX) + "[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]")
_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")


def key(cell_id: str) -> str | bytes:
    """The column value for a cell ID."""
    # Only the canonical spelling (what encoding the 32 bytes gives back) is shortened:
    # 42 characters, then one whose two low bits (padding) are zero.
    if len(cell_id) != _LENGTH or _CANONICAL.fullmatch(cell_id) is None:
        return cell_id
    return binascii.a2b_base64(cell_id[len(_PREFIX) :].encode("ascii").translate(_TO_STANDARD) + b"=")


def cell(stored: str | bytes) -> str:
    """The cell ID a column value holds."""
    if type(stored) is bytes:
        return _PREFIX + binascii.b2a_base64(stored, newline=False)[:43].translate(_TO_URLSAFE).decode("ascii")
    return stored  # type: ignore[return-value]


def order(stored: str | bytes) -> tuple[bool, str | bytes]:
    """A sort key over column values of both forms, in the primary key's order."""
    return type(stored) is bytes, stored


def keys(cell_ids: list[str]) -> list[str | bytes]:
    """`key` of each ID, in one call to lib._cells where it is built."""
    return _stored_keys(cell_ids) if _stored_keys is not None else [key(c) for c in cell_ids]


class _Celled(Protocol):
    cell_id: str


Item = TypeVar("Item", bound=_Celled)


def in_key_order(items: Iterable[Item]) -> list[tuple[str | bytes, Item]]:
    """(stored ID, item) pairs of items with a `cell_id`, sorted as the primary key
    orders them (`order`: TEXT IDs, then BLOB ones)."""
    items = list(items)
    pairs = zip(keys([item.cell_id for item in items]), items, strict=True)
    texts, blobs = [], []
    for pair in pairs:
        (blobs if type(pair[0]) is bytes else texts).append(pair)
    texts.sort(key=_first)  # IDs are unique: the items themselves are never compared
    blobs.sort(key=_first)
    return texts + blobs


_first = itemgetter(0)
_stored_keys = CELLS.stored_keys if CELLS is not None else None

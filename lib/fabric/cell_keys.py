"""How the SQLite store keeps a cell ID in its `cell_id` column (schema version 2).

A content-derived ID (`of:fid1:` and 43 characters of unpadded base64url naming a
32-byte hash, the form cell_id.cell_id makes) is kept as those 32 bytes, a BLOB: it
is stored twice (the row and its primary key), and the text is 51 bytes. Any other
ID stays TEXT as it is. SQLite never takes a BLOB equal to a TEXT, so the two forms
cannot collide, and `cell` gives back the very ID that `key` was given.
"""

from __future__ import annotations

import base64
import binascii

_PREFIX = "of:fid1:"
_LENGTH = len(_PREFIX) + 43


def key(cell_id: str) -> str | bytes:
    """The column value for a cell ID."""
    if len(cell_id) != _LENGTH or not cell_id.startswith(_PREFIX):
        return cell_id
    body = cell_id[len(_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=")
    except (binascii.Error, ValueError):
        return cell_id
    # only the canonical spelling (what encoding the bytes gives back) is shortened
    if len(raw) != 32 or base64.urlsafe_b64encode(raw)[:43].decode("ascii") != body:
        return cell_id
    return raw


def cell(stored: str | bytes) -> str:
    """The cell ID a column value holds."""
    if type(stored) is bytes:
        return _PREFIX + base64.urlsafe_b64encode(stored)[:43].decode("ascii")
    return stored  # type: ignore[return-value]

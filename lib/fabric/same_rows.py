"""Whether a refreshed index row equals its prior row, compared by parts (issue 10).

A publication links a row's stored cell instead of planning the row again when the
row equals its prior row (`commit_indexes`). A refresh of an unchanged session makes a
new row (its previews packed from the fresh snapshot) whose prior row's previews are
still in the store (`StoredPreviews`): hashing both rows whole read those twelve
preview cells back and walked both rows in the pure-Python hash (the stand-ins are no
plain JSON), about 0.9 ms a row. Compared by parts, the fields but the previews go
first (where a changed row differs; packed rows of one JSON block are equal without
decoding), and the previews last, each side by its hash: a stored side's hash is kept
from the first time it was read (`_stored_previews_hash`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lib.fabric.packed_previews import FIELD as PREVIEWS
from lib.fabric.packed_previews import LazyPreviews, StoredPreviews, same_previews
from lib.fabric.packed_rows import PackedRow
from lib.hashing import value_hash


def same_row(row: Mapping[str, Any], prior: Mapping[str, Any]) -> bool:
    """Equal as Fabric values. Rows copied from the prior row compare by identity,
    packed rows of the same fields without decoding them, previews packed from the
    same text without unpacking them."""
    if row is prior:
        return True
    if isinstance(row, PackedRow) and isinstance(prior, PackedRow):
        if row.same_as(prior):
            return True
        if _same_fields(row, prior):
            return _same_previews(row.get(PREVIEWS), prior.get(PREVIEWS))
    plain = row.plain() if isinstance(row, PackedRow) else row
    prior_plain = prior.plain() if isinstance(prior, PackedRow) else prior
    if plain.keys() != prior_plain.keys():
        return False
    if all(plain[k] is prior_plain[k] for k in plain):
        return True
    fields = {k: v for k, v in plain.items() if k != PREVIEWS}
    prior_fields = {k: v for k, v in prior_plain.items() if k != PREVIEWS}
    if value_hash(fields) != value_hash(prior_fields):
        return False
    return _same_previews(plain.get(PREVIEWS), prior_plain.get(PREVIEWS))


def _same_fields(row: PackedRow, prior: PackedRow) -> bool:
    """Both hold the same fields but for their previews: one JSON block (`same_as` of
    the two with their previews set alike; JSON blocks of equal fields are equal bytes)."""
    return row.with_previews(None).same_as(prior.with_previews(None)) is True


def _same_previews(previews: Any, prior: Any) -> bool:
    if same_previews(previews, prior):
        return True
    return _previews_hash(previews) == _previews_hash(prior)


def _previews_hash(previews: Any) -> bytes:
    if type(previews) is StoredPreviews:
        return _stored_previews_hash(previews)
    if isinstance(previews, LazyPreviews):
        previews = previews.unpack()  # a plain list: the C encoder hashes it
    return value_hash(previews)


# A prior row's stored previews -> their value hash, by the stand-in's identity (each
# entry holds its stand-in, so no other object can take its id). A stand-in names cells
# only publications write, every publication rewrites both index roots, and a prior
# whose stand-ins outlive a publication is reused only while no root moved since
# (`read_prior`; a prior read from the store makes new stand-ins). So the hash of what
# a stand-in read once is the hash of what it would read again, and a refresh of an
# unchanged session does not read its row's preview cells back to compare them.
_STORED_HASHES: dict[int, tuple[StoredPreviews, bytes]] = {}
_STORED_HASHES_LIMIT = 4096


def _stored_previews_hash(previews: StoredPreviews) -> bytes:
    known = _STORED_HASHES.get(id(previews))
    if known is not None and known[0] is previews:
        return known[1]
    digest = value_hash(previews.unpack())
    if len(_STORED_HASHES) >= _STORED_HASHES_LIMIT:
        _STORED_HASHES.clear()
    _STORED_HASHES[id(previews)] = (previews, digest)
    return digest

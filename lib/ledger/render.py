"""The ledger file's bytes, assembled from each receipt's kept bytes.

The file is rewritten whole on every write (two writes a command), and at its cap it
holds 256 settled receipts that rarely change. Rendering the whole document each time
encoded all of them again; `ReceiptPieces` keeps each receipt's rendered entry (keyed by
its command id, valid while the ledger holds that very stored dict: stored receipts are
replaced, never changed in place) and joins them into the frame. The bytes are exactly
`orjson.dumps(document, OPT_INDENT_2 | OPT_APPEND_NEWLINE)` of the whole document
(tests/ledger/test_ledger_render.py compares them on random states): a receipt rendered
alone with OPT_INDENT_2 is the nested one with every line after its first indented two
levels (4 spaces) further, since JSON text holds no raw newline inside a string.
"""

from __future__ import annotations

from typing import Any

import orjson

_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
_EMPTY_RECEIPTS = b'\n  "receipts": {},\n'  # the frame's receipts, rendered empty


def render_whole(schema: str, generation: int, receipts: dict[str, dict[str, Any]], pending: list[str]) -> bytes:
    """The document rendered in one call (receipts sorted by command id)."""
    doc = {
        "schema": schema,
        "generation": generation,
        "receipts": {cid: receipts[cid] for cid in sorted(receipts)},
        "pendingPublicationCommandIds": pending,
    }
    return orjson.dumps(doc, option=_OPTIONS)


class ReceiptPieces:
    """Each receipt's entry in the file (`    "<id>": {...}`), kept between writes."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[dict[str, Any], bytes]] = {}

    def render(
        self, schema: str, generation: int, receipts: dict[str, dict[str, Any]], pending: list[str]
    ) -> bytes:
        """`render_whole`'s bytes, each unchanged receipt's entry reused."""
        frame = orjson.dumps(
            {"schema": schema, "generation": generation, "receipts": {}, "pendingPublicationCommandIds": pending},
            option=_OPTIONS,
        )
        if not receipts:
            self._kept = {}
            return frame
        kept, fresh = self._kept, {}
        entries = []
        for cid in sorted(receipts):
            stored = receipts[cid]
            entry = kept.get(cid)
            if entry is None or entry[0] is not stored:
                entry = (stored, _entry(cid, stored))
            fresh[cid] = entry
            entries.append(entry[1])
        self._kept = fresh  # receipts no longer held are let go
        at = frame.index(_EMPTY_RECEIPTS)  # the first: schema and generation cannot hold it
        return b"".join((
            frame[:at], b'\n  "receipts": {\n', b",\n".join(entries), b"\n  },\n",
            frame[at + len(_EMPTY_RECEIPTS):],
        ))


def _entry(cid: str, stored: dict[str, Any]) -> bytes:
    body = orjson.dumps(stored, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
    return b"    " + orjson.dumps(cid) + b": " + body

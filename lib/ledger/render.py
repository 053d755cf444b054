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

import bisect
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
    """Each receipt's entry in the file (`    "<id>": {...}`), kept between writes in
    command id order. Brought up to date from the receipts a write touched when it is
    given them and its basis (the receipts it last rendered) is the write's base;
    rebuilt from every receipt otherwise (each unchanged receipt's entry still reused)."""

    def __init__(self) -> None:
        self._basis: dict[str, dict[str, Any]] | None = None
        self._order: list[str] = []  # command ids, sorted
        self._entries: list[bytes] = []  # their entries, in that order
        self._kept: dict[str, tuple[dict[str, Any], bytes]] = {}

    def render(
        self,
        schema: str,
        generation: int,
        receipts: dict[str, dict[str, Any]],
        pending: list[str],
        *,
        base: dict[str, dict[str, Any]] | None = None,
        touched: set[str] | None = None,
    ) -> bytes:
        """`render_whole`'s bytes. `touched`: the command ids set or deleted since
        `base`, the receipts this state was made from."""
        if base is None or base is not self._basis or touched is None:
            self._rebuild(receipts)
        else:
            for cid in touched:
                self._place(cid, receipts.get(cid))
        self._basis = receipts
        frame = orjson.dumps(
            {"schema": schema, "generation": generation, "receipts": {}, "pendingPublicationCommandIds": pending},
            option=_OPTIONS,
        )
        if not self._entries:
            return frame
        at = frame.index(_EMPTY_RECEIPTS)  # the first: schema and generation cannot hold it
        return b"".join((
            frame[:at], b'\n  "receipts": {\n', b",\n".join(self._entries), b"\n  },\n",
            frame[at + len(_EMPTY_RECEIPTS):],
        ))

    def forget(self) -> None:
        """The next render rebuilds (the last one was not written)."""
        self._basis = None

    def _rebuild(self, receipts: dict[str, dict[str, Any]]) -> None:
        kept, fresh = self._kept, {}
        self._order = sorted(receipts)
        self._entries = []
        for cid in self._order:
            stored = receipts[cid]
            entry = kept.get(cid)
            if entry is None or entry[0] is not stored:
                entry = (stored, _entry(cid, stored))
            fresh[cid] = entry
            self._entries.append(entry[1])
        self._kept = fresh  # receipts no longer held are let go

    def _place(self, cid: str, stored: dict[str, Any] | None) -> None:
        at = bisect.bisect_left(self._order, cid)
        held = at < len(self._order) and self._order[at] == cid
        if stored is None:
            if held:
                del self._order[at], self._entries[at], self._kept[cid]
            return
        entry = self._kept.get(cid)
        if entry is None or entry[0] is not stored:
            entry = self._kept[cid] = (stored, _entry(cid, stored))
        if held:
            self._entries[at] = entry[1]
        else:
            self._order.insert(at, cid)
            self._entries.insert(at, entry[1])


def _entry(cid: str, stored: dict[str, Any]) -> bytes:
    body = orjson.dumps(stored, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
    return b"    " + orjson.dumps(cid) + b": " + body

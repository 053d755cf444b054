"""Strings held as one table, not an object each (issue 14 goal 4).

Something kept a string a session until a sync's commit (a row's key, a listed session
ID) cost the string (about 85 bytes for a 36-character ID), its set or dict entry and
its list slot, and those long-lived small objects pinned the allocator arenas their
batch's short-lived objects had shared. A `KeyTable` keeps, per string, its UTF-8 bytes
in one buffer and where they end (8 bytes), its hash (8 bytes) and a slot in an
open-addressed index by that hash (4 bytes a slot, at most half full): about 20 bytes
beside the text, in a few large buffers. A string is made again when asked.

prior_table.PriorRows (the prior rows, a publication's touches) keys its rows by one;
the collection keeps the IDs it listed in one (lib/reconcile.py).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator


class KeyTable:
    """Strings in the order appended; looked up by value once indexed (`index`, or kept
    indexed as it grows once indexed)."""

    def __init__(self, keys: Iterable[str] = (), *, indexed: bool = False) -> None:
        self._keys = bytearray()  # each string, UTF-8, ending at `_key_ends[at]`
        self._key_ends = array("Q")
        self._key_hashes = array("q")
        self._slots = array("i")  # places by their string's hash, open addressing (-1: empty)
        self._indexed = -1  # places in `_slots` (-1: none; indexed when first looked up)
        if indexed:
            self.index()
        for key in keys:
            self.append(key)

    def append(self, key: str) -> int:
        """`key` at the end (a string there already is not looked for); its place."""
        at = len(self._key_ends)
        self._keys += key.encode("utf-8", "surrogatepass")
        self._key_ends.append(len(self._keys))
        self._key_hashes.append(hash(key))
        if self._indexed == at:  # kept indexed as it grows
            self._place(at)
        return at

    def add_distinct(self, key: str) -> bool:
        """`key` appended unless it is there already; whether it was appended."""
        if self.position(key) is not None:
            return False
        self.append(key)
        return True

    def index(self) -> int | None:
        """Index every string; where one appears again (the later place), else None."""
        hashes, duplicate = self._key_hashes, None
        size = 8
        while size < 2 * len(hashes):
            size *= 2
        slots = self._slots = array("i", [-1]) * size
        mask = size - 1
        for at, h in enumerate(hashes):
            slot = h & mask
            while slots[slot] >= 0:
                other = slots[slot]
                if duplicate is None and hashes[other] == h and self.text(other) == self.text(at):
                    duplicate = at
                slot = (slot + 1) & mask
            slots[slot] = at
        self._indexed = len(hashes)
        return duplicate

    def _place(self, at: int) -> None:
        """Place `at` into the index (grown, all placed again, at half full)."""
        slots = self._slots
        if 2 * (at + 1) > len(slots):
            self.index()
            return
        mask = len(slots) - 1
        slot = self._key_hashes[at] & mask
        while slots[slot] >= 0:
            slot = (slot + 1) & mask
        slots[slot] = at
        self._indexed = at + 1

    def position(self, key: object) -> int | None:
        """The (first) place of `key`, or None."""
        if self._indexed != len(self._key_ends):
            self.index()
        if type(key) is not str:
            return None
        slots = self._slots
        hashes, h, mask = self._key_hashes, hash(key), len(slots) - 1
        slot = h & mask
        while True:
            at = slots[slot]
            if at < 0:
                return None
            if hashes[at] == h and self.text(at) == key:
                return at
            slot = (slot + 1) & mask

    def key_buffers(self) -> tuple[bytearray, array, array, array]:
        """The strings' UTF-8, where each ends, their hashes and the slots by hash (all
        indexed), read-only: the ordering's table finds the sessions of a prior table's
        rows in them, without a key of its own (ordering_table.py)."""
        if self._indexed != len(self._key_ends):
            self.index()
        return self._keys, self._key_ends, self._key_hashes, self._slots

    def text(self, at: int) -> str:
        """The string at `at` (made now)."""
        start = self._key_ends[at - 1] if at else 0
        return self._keys[start : self._key_ends[at]].decode("utf-8", "surrogatepass")

    def __contains__(self, key: object) -> bool:
        return self.position(key) is not None

    def __iter__(self) -> Iterator[str]:
        return map(self.text, range(len(self._key_ends)))

    def __len__(self) -> int:
        return len(self._key_ends)

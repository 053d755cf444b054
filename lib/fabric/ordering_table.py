"""Each session's newest observation sequence, held as one table, not a dict (issue 14 goal 4).

The ordering (ordering.py) remembers a sequence for every session the index ever held:
25,000 sessions were a dict of 25,000 entries, a key string and an int object each
(about 5 MB with the merged copy made at every commit), held from the publication's
opening to its commit. `SessionSequences` keeps per session:

- its key's UTF-8 bytes in one buffer, where the key ends (8 bytes), its hash (8 bytes)
  and a slot in an open-addressed index by that hash (4 bytes a slot, at most half the
  slots filled): `SessionKeys`, append-only;
- its sequence, 8 bytes in an array (0: none recorded).

No Python object a session. A table's keys are shared by the tables made from it: a
publication's records (`recording`) and the merged state (`merged`) are the prior's
keys with sequences of their own, so recording 25,000 known sessions and merging them
copies 8 bytes a session, never a key. A table sees only the keys it had, so another's
added keys never change the state a cached prior holds; keys are added only by the
table that sees all of them (else it copies its own first), so a key is there once.

Keys are kept in the order they came: the stored value's, which is key order, and then
each new key. `in_key_order` gives the entries sorted (a key's UTF-8 bytes sort as its
code points do, as `sorted` sorts strings), sorting only the keys added out of order, a
bounded run at a time.
"""

from __future__ import annotations

import heapq
import re
import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

_RUN = 2048  # keys sorted at a time (a bytes object each while sorted), then merged
_EMPTY_SLOTS = 8
_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")  # a lone surrogate's bytes (surrogatepass)
_ADDING = threading.Lock()  # a table adds keys to shared ones when it sees all of them


def _encoded(key: str) -> bytes:
    return key.encode("utf-8", "surrogatepass")


class SessionKeys:
    """Session keys, each once, in the order added; found by hash (open addressing)."""

    __slots__ = ("text", "ends", "hashes", "slots", "sorted_upto", "plain", "_last")

    def __init__(self) -> None:
        self.text = bytearray()  # each key's UTF-8, ending at ends[at]
        self.ends = array("Q")
        self.hashes = array("q")
        self.slots = array("i", [-1]) * _EMPTY_SLOTS  # key positions by hash (-1: empty)
        self.sorted_upto = 0  # keys [0, sorted_upto) are in key order
        # no key starts with "/" or holds a lone surrogate (ordering_text writes such
        # a table's text another way)
        self.plain = True
        self._last: tuple[str, int] = ("", -1)  # the last key found (rules, then records)

    def __len__(self) -> int:
        return len(self.ends)

    def span(self, at: int) -> tuple[int, int]:
        return (self.ends[at - 1] if at else 0), self.ends[at]

    def key(self, at: int) -> str:
        start, end = self.span(at)
        return self.text[start:end].decode("utf-8", "surrogatepass")

    def encoded(self, at: int) -> bytes:
        start, end = self.span(at)
        return bytes(self.text[start:end])

    def find(self, key: str, limit: int) -> int:
        """Where `key` is among the first `limit` keys, or -1."""
        last = self._last
        if last[0] is key:
            at = last[1]
            return at if at < limit else -1
        if type(key) is not str:
            return -1
        h, slots, hashes, ends, text = hash(key), self.slots, self.hashes, self.ends, self.text
        mask, encoded = len(slots) - 1, None
        slot = h & mask
        while True:
            at = slots[slot]
            if at < 0:
                return -1
            if hashes[at] == h:
                if encoded is None:
                    encoded = _encoded(key)
                start = ends[at - 1] if at else 0
                if ends[at] - start == len(encoded) and text.startswith(encoded, start):
                    self._last = (key, at)
                    return at if at < limit else -1
            slot = (slot + 1) & mask

    def append(self, key: str) -> int:
        """Add `key` (not there yet); its position."""
        at, encoded = len(self.ends), _encoded(key)
        if self.sorted_upto == at and (not at or self.encoded(at - 1) < encoded):
            self.sorted_upto = at + 1
        if encoded[:1] == b"/" or _SURROGATE.search(encoded):
            self.plain = False
        self.text += encoded
        self.ends.append(len(self.text))
        h = hash(key)
        self.hashes.append(h)
        if 2 * (at + 1) > len(self.slots):
            self._index(2 * len(self.slots))
        else:
            self._slot(h, at)
        return at

    def reserve(self, count: int) -> None:
        """Slots for `count` keys, so adding them indexes none twice."""
        size = len(self.slots)
        while size < 2 * count:
            size *= 2
        if size != len(self.slots):
            self._index(size)

    def _slot(self, h: int, at: int) -> None:
        slots = self.slots
        mask = len(slots) - 1
        slot = h & mask
        while slots[slot] >= 0:
            slot = (slot + 1) & mask
        slots[slot] = at

    def _index(self, size: int) -> None:
        # built aside and then swapped in: a reader in another thread probes either whole
        slots = array("i", [-1]) * size
        mask = size - 1
        for at, h in enumerate(self.hashes):
            slot = h & mask
            while slots[slot] >= 0:
                slot = (slot + 1) & mask
            slots[slot] = at
        self.slots = slots

    def copy(self, count: int) -> SessionKeys:
        """The first `count` keys, in a table of their own (its buffers copied whole)."""
        out = SessionKeys()
        end = self.ends[count - 1] if count else 0
        out.text = self.text[:end]
        out.ends, out.hashes = self.ends[:count], self.hashes[:count]
        out.sorted_upto, out.plain = min(self.sorted_upto, count), self.plain
        if count == len(self.ends):
            out.slots = array("i", self.slots)
        else:
            out.reserve(count)
            out._index(len(out.slots))
        return out


class SessionSequences(Mapping[str, int]):
    """Session key -> its newest sequence (a positive int below 2**63)."""

    __slots__ = ("_keys", "_seqs")

    def __init__(self, entries: Iterable[tuple[str, int]] = ()) -> None:
        self._keys = SessionKeys()  # maybe shared; this table's are the first len(_seqs)
        self._seqs = array("q")
        for key, seq in entries:
            self.put(key, seq)

    @staticmethod
    def _sharing(keys: SessionKeys, seqs: array) -> SessionSequences:
        out = SessionSequences()
        out._keys, out._seqs = keys, seqs
        return out

    # -- reading ---------------------------------------------------------------------------

    def get(self, key: str, default: Any = None) -> Any:
        at = self._keys.find(key, len(self._seqs))
        seq = self._seqs[at] if at >= 0 else 0
        return seq if seq > 0 else default

    def __getitem__(self, key: str) -> int:
        seq = self.get(key, 0)
        if seq <= 0:
            raise KeyError(key)
        return seq

    def __contains__(self, key: object) -> bool:
        return type(key) is str and self.get(key, 0) > 0

    def __len__(self) -> int:
        return len(self._seqs) - self._seqs.count(0)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _seq in self.items())

    def items(self) -> Iterator[tuple[str, int]]:  # type: ignore[override]
        """(key, sequence) in the order the keys came."""
        keys, seqs = self._keys, self._seqs
        return ((keys.key(at), seqs[at]) for at in range(len(seqs)) if seqs[at] > 0)

    # -- changing ---------------------------------------------------------------------------

    def put(self, key: str, seq: int) -> None:
        """`key`'s sequence is `seq` (a stored value's entry: the last one of a key counts)."""
        self._seqs[self._position(key)] = seq

    def record(self, key: str, seq: int) -> None:
        """`key`'s sequence is `seq` when that is newer than the one it has."""
        at = self._keys.find(key, len(self._seqs))
        if at < 0:
            if seq <= 0:
                return
            at = self._position(key)
        if seq > self._seqs[at]:
            self._seqs[at] = seq

    def _position(self, key: str) -> int:
        at = self._keys.find(key, len(self._seqs))
        if at >= 0:
            return at
        with _ADDING:
            if len(self._keys) != len(self._seqs):  # another table added keys after ours
                self._keys = self._keys.copy(len(self._seqs))
            at = self._keys.append(key)
            self._seqs.append(0)
        return at

    def reserve(self, count: int) -> None:
        """Room for `count` keys in all (a table being read)."""
        self._keys.reserve(count)

    def clear(self) -> None:
        """Empty, its buffers let go (shared ones are left as they are)."""
        self._keys, self._seqs = SessionKeys(), array("q")

    # -- tables made from this one ------------------------------------------------------

    def recording(self) -> SessionSequences:
        """An empty table on this one's keys: records of known keys copy no key."""
        return SessionSequences._sharing(self._keys, array("q", [0]) * len(self._seqs))

    def merged(self, recorded: Mapping[str, int]) -> SessionSequences:
        """This table with `recorded` added (newest wins); neither is changed."""
        if type(recorded) is SessionSequences and recorded._keys is self._keys and len(recorded._seqs) >= len(
            self._seqs
        ):
            seqs = array("q", recorded._seqs)  # `recording()`'s: the same keys, maybe more
            for at, seq in enumerate(self._seqs):
                if seq > seqs[at]:
                    seqs[at] = seq
            return SessionSequences._sharing(self._keys, seqs)
        out = SessionSequences._sharing(self._keys, array("q", self._seqs))
        for key, seq in recorded.items():
            out.record(key, seq)
        return out

    # -- in key order -------------------------------------------------------------------

    @property
    def keys_table(self) -> SessionKeys:
        return self._keys

    def sequence_at(self, at: int) -> int:
        return self._seqs[at]

    def largest(self) -> int:
        return max(self._seqs, default=0)

    def in_key_order(self) -> Iterator[int]:
        """The positions of the entries (sequence above 0), their keys in order."""
        keys, seqs = self._keys, self._seqs
        count = len(seqs)
        ordered = min(keys.sorted_upto, count)
        runs: list[Iterable[int]] = [range(ordered)]
        for start in range(ordered, count, _RUN):
            run = sorted(range(start, min(start + _RUN, count)), key=keys.encoded)
            runs.append(array("I", run))
            del run
        positions = runs[0] if len(runs) == 1 else heapq.merge(*runs, key=keys.encoded)
        return (at for at in positions if seqs[at] > 0)

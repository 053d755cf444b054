"""Each session's newest observation sequence, held as one table, not a dict (issue 14 goal 4).

The ordering (ordering.py) remembers a sequence for every session the index ever held:
25,000 sessions were a dict of 25,000 entries, a key string and an int object each,
and a second dict at every commit (the merged state). `SessionSequences` keeps, per
session, its sequence in an array (8 bytes; 0: none), and its key in `SessionKeys`:

- a key the prior index's rows hold is theirs: the prior table's key buffer, hashes and
  open-addressed slots (prior_table.PriorRows.key_buffers), shared as they are, read-only;
- any other key is the table's own, laid out the same way: its UTF-8 in one buffer,
  where it ends (8 bytes), its hash (8 bytes), a slot by that hash (4 bytes a slot, at
  most half of them filled);
- and which keys are in key order (`ordered`, 4 bytes a key, and a byte a key saying so).

No Python object a session. A publication's records (`recording`) and the merged state
(`merged`) share the prior state's keys with sequences of their own, so recording
25,000 known sessions and merging them copies 8 bytes a session, never a key. A table
sees only the keys it had, so keys another table adds never change the state a cached
prior holds; keys are added only by a table that sees all of them (else it copies the
ones it sees first), so each key is there once.

`in_key_order` gives the entries sorted (a key's UTF-8 bytes sort as its code points
do, as `sorted` sorts strings): the stored value's keys came in key order, and keys
added out of order are sorted a bounded run at a time and merged in.
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
_CHANGING = threading.Lock()  # keys added, or put in order, by one table at a time
Buffers = tuple[bytearray, array, array, array]  # UTF-8, ends, hashes, slots by hash


def _encoded(key: str) -> bytes:
    return key.encode("utf-8", "surrogatepass")


def _probe(text: bytearray, ends: array, hashes: array, slots: array, h: int, key: str) -> int:
    """Where `key` (of hash `h`) is in these buffers, or -1 (open addressing by the hash's
    low bits, the next slot on a collision: prior_table.py's); encoded only to compare."""
    mask, encoded = len(slots) - 1, None
    slot = h & mask
    while True:
        at = slots[slot]
        if at < 0:
            return -1
        if hashes[at] == h:
            if encoded is None:
                encoded = key.encode("utf-8", "surrogatepass")
            start = ends[at - 1] if at else 0
            if ends[at] - start == len(encoded) and text.startswith(encoded, start):
                return at
        slot = (slot + 1) & mask


def _indexed(hashes: array, size: int) -> array:
    slots = array("i", [-1]) * size
    mask = size - 1
    for at, h in enumerate(hashes):
        slot = h & mask
        while slots[slot] >= 0:
            slot = (slot + 1) & mask
        slots[slot] = at
    return slots


class SessionKeys:
    """Session keys, each once: the first `shared` a prior table's, then its own."""

    __slots__ = ("_base", "shared", "text", "ends", "hashes", "slots", "ordered", "listed", "plain", "_last")

    def __init__(self, base: Buffers | None = None) -> None:
        self._base = base  # a prior table's keys (never changed)
        self.shared = len(base[1]) if base is not None else 0
        self.text = bytearray()  # own keys' UTF-8, the n-th ending at ends[n]
        self.ends = array("Q")
        self.hashes = array("q")
        self.slots = array("i", [-1]) * _EMPTY_SLOTS  # own keys by hash (-1: empty)
        self.ordered = array("I")  # positions of keys in key order (some of the keys)
        self.listed = bytearray(self.shared)  # 1: the position is in `ordered`
        # no key with a sequence starts with "/" or holds a lone surrogate (ordering_text
        # writes the text of a table with such a key another way)
        self.plain = True
        self._last: tuple[object, int] = (None, -1)  # the last key found (a rule, then its record)

    def __len__(self) -> int:
        return self.shared + len(self.ends)

    def piece(self, at: int) -> tuple[bytearray, int, int]:
        """Key `at`'s UTF-8: its buffer, start and end."""
        if at < self.shared:
            text, ends = self._base[0], self._base[1]  # type: ignore[index]
        else:
            text, ends, at = self.text, self.ends, at - self.shared
        return text, (ends[at - 1] if at else 0), ends[at]

    def encoded(self, at: int) -> bytes:
        text, start, end = self.piece(at)
        return bytes(text[start:end])

    def key(self, at: int) -> str:
        text, start, end = self.piece(at)
        return text[start:end].decode("utf-8", "surrogatepass")

    def texts(self) -> Iterator[bytearray]:
        if self._base is not None:
            yield self._base[0]
        yield self.text

    def find(self, key: str, limit: int) -> int:
        """Where `key` is among the first `limit` keys, or -1."""
        last = self._last
        if last[0] is key:
            return last[1] if last[1] < limit else -1
        if type(key) is not str:
            return -1
        h = hash(key)
        at = _probe(*self._base, h, key) if self._base is not None else -1
        if at < 0:
            at = _probe(self.text, self.ends, self.hashes, self.slots, h, key) if self.ends else -1
            if at < 0:
                return -1
            at += self.shared
        self._last = (key, at)
        return at if at < limit else -1

    def append(self, key: str) -> int:
        """Add `key` (not there yet) as an own key; its position."""
        own = len(self.ends)
        self.text += _encoded(key)
        self.ends.append(len(self.text))
        h = hash(key)
        self.hashes.append(h)
        self.listed.append(0)
        if 2 * (own + 1) > len(self.slots):
            self.slots = _indexed(self.hashes, 2 * len(self.slots))  # made aside: a reader probes either
        else:
            slots = self.slots
            mask = len(slots) - 1
            slot = h & mask
            while slots[slot] >= 0:
                slot = (slot + 1) & mask
            slots[slot] = own
        return self.shared + own

    def note(self, at: int) -> None:
        """Key `at` has a sequence now: in `ordered` when it sorts after the last there."""
        if self.listed[at]:
            return
        encoded = self.encoded(at)
        if encoded[:1] == b"/" or _SURROGATE.search(encoded):
            self.plain = False
        ordered = self.ordered
        if not ordered or self.encoded(ordered[-1]) < encoded:
            ordered.append(at)
            self.listed[at] = 1

    def reserve(self, count: int) -> None:
        """Slots for `count` own keys, so adding them indexes none twice."""
        size = len(self.slots)
        while size < 2 * count:
            size *= 2
        if size != len(self.slots):
            self.slots = _indexed(self.hashes, size)

    def copy(self, count: int) -> SessionKeys:
        """The first `count` keys in a table of their own (the prior table's still shared)."""
        out = SessionKeys(self._base)
        own = count - self.shared
        out.text = self.text[: self.ends[own - 1] if own else 0]
        out.ends, out.hashes = self.ends[:own], self.hashes[:own]
        out.slots = array("i", self.slots) if own == len(self.ends) else _indexed(out.hashes, len(self.slots))
        out.ordered = array("I", (at for at in self.ordered if at < count))
        out.listed, out.plain = self.listed[:count], self.plain
        return out


class SessionSequences(Mapping[str, int]):
    """Session key -> its newest sequence (a positive int below 2**63)."""

    __slots__ = ("_keys", "_seqs")

    def __init__(self, entries: Iterable[tuple[str, int]] = (), *, shared: Buffers | None = None) -> None:
        """`shared`: a prior table's keys (PriorRows.key_buffers), used, not copied."""
        self._keys = SessionKeys(shared)  # maybe another table's too: this one's are the first len(_seqs)
        self._seqs = array("q", [0]) * self._keys.shared
        self.load(entries)

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
        """(key, sequence) in the order of the keys' positions."""
        keys, seqs = self._keys, self._seqs
        return ((keys.key(at), seqs[at]) for at in range(len(seqs)) if seqs[at] > 0)

    # -- changing ---------------------------------------------------------------------------

    def load(self, entries: Iterable[tuple[str, int]]) -> None:
        """A stored value's entries, in its order (the last of a key counts), into a
        table no other shares yet; a key sorting after the one before is in order."""
        keys, seqs = self._keys, self._seqs
        ordered, listed = keys.ordered, keys.listed
        with _CHANGING:
            last = keys.key(ordered[-1]) if ordered else None  # the last key in order
            for key, seq in entries:
                at = keys.find(key, len(seqs))
                if at < 0:
                    at = keys.append(key)
                    seqs.append(0)
                seqs[at] = seq
                if key[:1] == "/" or (not key.isascii() and _SURROGATE.search(_encoded(key))):
                    keys.plain = False
                if not listed[at] and (last is None or last < key):
                    ordered.append(at)
                    listed[at] = 1
                    last = key

    def record(self, key: str, seq: int) -> None:
        """`key`'s sequence is `seq` when that is newer than the one it has."""
        at = self._keys.find(key, len(self._seqs))
        if at < 0:
            if seq <= 0:
                return
            at = self._position(key)
        if seq > self._seqs[at]:
            self._seqs[at] = seq
            self._noted(at)

    def _noted(self, at: int) -> None:
        keys = self._keys
        if not keys.listed[at]:
            with _CHANGING:
                keys.note(at)

    def _position(self, key: str) -> int:
        at = self._keys.find(key, len(self._seqs))
        if at >= 0:
            return at
        with _CHANGING:
            if len(self._keys) != len(self._seqs):  # another table added keys after ours
                self._keys = self._keys.copy(len(self._seqs))
            at = self._keys.append(key)
            self._seqs.append(0)
        return at

    def reserve(self, count: int) -> None:
        """Room for `count` keys of its own (a table being read)."""
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
        mine = self._seqs
        if type(recorded) is SessionSequences and recorded._keys is self._keys and len(recorded._seqs) >= len(mine):
            seqs = array("q", recorded._seqs)  # `recording()`'s: these keys, maybe more
            for at, seq in enumerate(mine):
                if seq > seqs[at]:
                    seqs[at] = seq
            return SessionSequences._sharing(self._keys, seqs)
        out = SessionSequences._sharing(self._keys, array("q", mine))
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
        listed = (at for at in keys.ordered if at < count and seqs[at] > 0)
        if not keys.listed.count(0, 0, count):
            return listed
        runs: list[Iterable[int]] = [listed]
        held: list[int] = []
        for at in range(count):
            if seqs[at] > 0 and not keys.listed[at]:
                held.append(at)
                if len(held) == _RUN:
                    runs.append(array("I", sorted(held, key=keys.encoded)))
                    held = []
        if held:
            runs.append(array("I", sorted(held, key=keys.encoded)))
        del held
        return heapq.merge(*runs, key=keys.encoded) if len(runs) > 1 else listed

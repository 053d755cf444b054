"""What a ledger write changed, and the settled receipts in completion order.

At its cap the ledger drops the oldest settled receipt on nearly every write. Finding
it by walking all 256 made each write's cost grow with the ledger; `SettledOrder` keeps
the settled receipts sorted between writes and updates only the command ids a write
touched (`TrackedReceipts` notes them, and the markers that changed), so a write costs
the same at 60 receipts as at 256. Each keeps the receipts dict it was last brought up
to date with (its basis): a write whose base is another dict (a failed write left
memory at the state before it) rebuilds it from that base.
"""

from __future__ import annotations

import bisect
from typing import Any

Receipts = dict[str, dict[str, Any]]


class TrackedReceipts(dict):  # type: ignore[type-arg]
    """A batch's working copy of the receipts that notes each command id set or deleted
    (`touched`); any other change makes `touched` None (unknown: rebuild)."""

    __slots__ = ("touched",)

    def __init__(self, base: Receipts) -> None:
        super().__init__(base)
        self.touched: set[str] | None = set()

    def __setitem__(self, cid: str, stored: dict[str, Any]) -> None:
        if self.touched is not None:
            self.touched.add(cid)
        super().__setitem__(cid, stored)

    def __delitem__(self, cid: str) -> None:
        if self.touched is not None:
            self.touched.add(cid)
        super().__delitem__(cid)

    def _untracked(self) -> None:
        self.touched = None

    def pop(self, *args: Any) -> Any:
        self._untracked()
        return super().pop(*args)

    def popitem(self) -> Any:
        self._untracked()
        return super().popitem()

    def setdefault(self, *args: Any) -> Any:
        self._untracked()
        return super().setdefault(*args)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._untracked()
        super().update(*args, **kwargs)

    def clear(self) -> None:
        self._untracked()
        super().clear()


def completion_key(cid: str, stored: dict[str, Any]) -> tuple[str, str]:
    """Oldest completion first; command ids are unique, so no two keys tie."""
    return (stored.get("completedAt") or "", cid)


def is_settled(cid: str, stored: dict[str, Any], waiting: set[str]) -> bool:
    return cid not in waiting and stored.get("status") != "in-flight"


class SettledOrder:
    """The settled receipts (neither awaiting publication nor in flight) of the ledger's
    latest state, by completion."""

    def __init__(self) -> None:
        self._basis: Receipts | None = None
        self._pending: frozenset[str] = frozenset()
        self._keys: list[tuple[str, str]] = []  # sorted
        self._key_of: dict[str, tuple[str, str]] = {}

    def drop_beyond(self, limit: int, base: Receipts, receipts: TrackedReceipts, pending: list[str]) -> None:
        """Delete from `receipts` (the next state, made from `base`) its settled receipts
        beyond `limit`, oldest completion first."""
        waiting = frozenset(pending)
        if self._basis is not base or receipts.touched is None:
            self._rebuild(receipts, waiting)
        else:
            for cid in receipts.touched | (waiting ^ self._pending):
                self._place(cid, receipts.get(cid), waiting)
        self._pending = waiting
        for _, cid in self._keys[: max(0, len(self._keys) - limit)]:
            del receipts[cid]  # noted in touched: the render drops its entry
            del self._key_of[cid]
        del self._keys[: max(0, len(self._keys) - limit)]
        self._basis = receipts

    def forget(self) -> None:
        """The next write rebuilds (its state was not written)."""
        self._basis = None

    def _rebuild(self, receipts: Receipts, waiting: frozenset[str]) -> None:
        self._key_of = {
            cid: completion_key(cid, stored) for cid, stored in receipts.items() if is_settled(cid, stored, waiting)
        }
        self._keys = sorted(self._key_of.values())

    def _place(self, cid: str, stored: dict[str, Any] | None, waiting: frozenset[str]) -> None:
        old = self._key_of.pop(cid, None)
        if old is not None:
            del self._keys[bisect.bisect_left(self._keys, old)]
        if stored is not None and is_settled(cid, stored, waiting):
            key = self._key_of[cid] = completion_key(cid, stored)
            bisect.insort(self._keys, key)

"""Preparations kept between a worker's refreshes, so a session read again unchanged is
not prepared again (session 23; docs/command-path.md).

Every command refreshes its session, and most of those reads return what the last one
did (the session's events only grow while a provider runs). `PreparedReads` keeps, per
session, a digest of the last snapshot it prepared (its pickle: exact, so any difference
of value or type, a NaN a JSON dump would write as null included, gives another
digest) with that preparation, its chunks dropped. A read whose digest matches is
handed the kept preparation instead of preparing again, but only when the index row it
is published against carries that preparation's snapshot hash and driver: then the
publication takes its unchanged path, which never reads the chunks (no graph is
written). Anything else prepares the snapshot as before. So what is published is what
preparing again would publish.

Only small sessions are kept (their chunks at most MAX_BYTES together, at most
CAPACITY sessions, least recently used dropped): a large session's preparation holds
every normalized message, and a session that large changes with every command anyway.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
import threading
from collections import OrderedDict

from lib.prepare import PreparedSession
from lib.types import NativeSessionSnapshot

CAPACITY = 256
MAX_BYTES = 64 * 1024


class PreparedReads:
    def __init__(self, capacity: int = CAPACITY, max_bytes: int = MAX_BYTES) -> None:
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[bytes, PreparedSession]] = OrderedDict()

    @staticmethod
    def digest(snapshot: NativeSessionSnapshot) -> bytes | None:
        """The snapshot's digest, or None when it cannot be pickled (then it is not kept)."""
        try:
            return hashlib.blake2b(pickle.dumps(snapshot, protocol=5), digest_size=16).digest()
        except Exception:  # noqa: BLE001 - an unpicklable value only means no reuse
            return None

    def get(self, key: str, digest: bytes | None) -> PreparedSession | None:
        """The kept preparation of `key` when it was made from a snapshot with `digest`."""
        if digest is None:
            return None
        with self._lock:
            kept = self._kept.get(key)
            if kept is None or kept[0] != digest:
                return None
            self._kept.move_to_end(key)
            return kept[1]

    def put(self, key: str, digest: bytes | None, prepared: PreparedSession) -> None:
        """Keep `prepared` (without its chunks) for the next read of `key`; a session too
        large to keep forgets what was kept for it."""
        with self._lock:
            self._kept.pop(key, None)
            if digest is None or sum(chunk.byte_length for chunk in prepared.chunks) > self._max_bytes:
                return
            self._kept[key] = (digest, dataclasses.replace(prepared, chunks=()))
            while len(self._kept) > self._capacity:
                self._kept.popitem(last=False)

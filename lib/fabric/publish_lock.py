"""The publish lock: one publication at a time per (store, space) across processes.

It is the store's lock named "publish" (`store.lock(space, PUBLISH_LOCK)`, see
store_lock.py for the lock and lock_files.py for where the SQLite store keeps it): a
short-held serial publish queue between processes (`agentctl publish` from cron beside
a running `agentctl sync`), so a second publisher waits its turn and, past its timeout,
gets `PublishLockHeld` naming the holder (pid, host, command).

`FabricTarget.lock` is this lock for the target's space; `publish_lock(store, space)`
gives it to a caller without a target.
"""

from __future__ import annotations

from lib.fabric.store import Store
from lib.fabric.store_lock import (
    DEFAULT_TIMEOUT_SECONDS,
    PUBLISH_LOCK,
    OnWait,
    PublishLockHeld,
    StoreLock,
    describe_holder,
)

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "PUBLISH_LOCK",
    "PublishLockHeld",
    "describe_holder",
    "publish_lock",
]


def publish_lock(
    store: Store,
    space: str,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    on_wait: OnWait | None = None,
) -> StoreLock:
    """The space's publish lock in this store (nothing is created until it is acquired)."""
    return store.lock(space, PUBLISH_LOCK, timeout=timeout, on_wait=on_wait)

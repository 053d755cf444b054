"""Store locks as PostgreSQL session-level advisory locks: locks that span machines.

A lock is `pg_advisory_lock(key)` where key is the first 8 bytes of
sha256("agentctl-lock", space, name), taken on a connection of its own that is opened
for the acquisition and closed on release. Advisory locks belong to the session that
took them, so:
  - two lock objects (two threads, two processes, two machines) exclude each other,
    because each takes its own session;
  - a holder that dies, or whose connection drops, releases the lock at once (the
    server ends the session), so nothing is left to clean up.
Advisory locks are per database, so the key needs no store identity in it.

Waiting uses the server's own queue with `lock_timeout` (no polling); a zero timeout
is `pg_try_advisory_lock`. The holder's note sits in `fabric_lock_holders`, with the
backend pid of the holding session, and is read back only while that session still
holds the lock (pg_locks), so a note left by a dead holder is never shown.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any

import psycopg
import psycopg.errors

from lib.fabric.postgres_connect import connect, failure
from lib.fabric.store_lock import StoreLock
from lib.fabric.store_url import display_store_url


def lock_key(space: str, name: str) -> int:
    """The advisory-lock key of (space, name), a signed 64-bit integer."""
    digest = hashlib.sha256(f"agentctl-lock\n{space}\n{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


# the note of the session that holds the advisory lock `key` now, if any
_READ_HOLDER = """
SELECT h.note FROM fabric_lock_holders h
WHERE h.key = %(key)s AND EXISTS (
    SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.pid = h.backend_pid
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = %(high)s::oid AND l.objid = %(low)s::oid AND l.objsubid = 1
)
"""


class AdvisoryStoreLock(StoreLock):
    """A StoreLock held as a session-level advisory lock on its own connection."""

    def __init__(self, url: str, space: str, name: str, **options: Any) -> None:
        self.key = lock_key(space, name)
        super().__init__(
            space, name, where=f"{display_store_url(url)} (advisory lock {name}, {space})", **options
        )
        self._url = url
        self._conn: psycopg.Connection | None = None

    def _take(self, timeout: float) -> bool:
        conn = connect(self._url)
        try:
            if timeout == 0:
                (taken,) = conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()
            else:
                # lock_timeout bounds the wait in the server's lock queue; 0 is no limit
                milliseconds = max(1, int(timeout * 1000)) if timeout > 0 else 0
                conn.execute(f"SET lock_timeout = {milliseconds}")
                try:
                    conn.execute("SELECT pg_advisory_lock(%s)", (self.key,))
                    taken = True
                except psycopg.errors.LockNotAvailable:
                    taken = False
                conn.execute("SET lock_timeout = 0")
        except psycopg.Error as exc:
            conn.close()
            raise failure(self._url, exc) from None
        except BaseException:  # interrupted while waiting: the session must not keep it
            conn.close()
            raise
        if not taken:
            conn.close()
            return False
        self._conn = conn
        return True

    def _give(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        # closing the session releases its advisory locks; unlock first so a waiter
        # gets the lock without waiting for the server to notice the closed socket
        with contextlib.suppress(psycopg.Error):
            conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
        conn.close()

    def _write_holder(self, note: dict[str, Any]) -> None:
        assert self._conn is not None
        try:
            self._conn.execute(
                "INSERT INTO fabric_lock_holders (key, backend_pid, note) "
                "VALUES (%s, pg_backend_pid(), %s) ON CONFLICT (key) DO UPDATE SET "
                "backend_pid = excluded.backend_pid, note = excluded.note",
                (self.key, json.dumps(note)),
            )
        except psycopg.Error as exc:
            raise failure(self._url, exc) from None

    def _clear_holder(self) -> None:
        if self._conn is None:
            return
        with contextlib.suppress(psycopg.Error):
            self._conn.execute(
                "DELETE FROM fabric_lock_holders WHERE key = %s AND backend_pid = pg_backend_pid()",
                (self.key,),
            )

    def read_holder(self) -> dict[str, Any] | None:
        unsigned = self.key & 0xFFFFFFFFFFFFFFFF
        params = {"key": self.key, "high": unsigned >> 32, "low": unsigned & 0xFFFFFFFF}
        try:
            with connect(self._url) as conn:
                row = conn.execute(_READ_HOLDER, params).fetchone()
        except Exception:  # the note is for people: a store that fails names no holder
            return None
        if row is None:
            return None
        try:
            note = json.loads(row[0])
        except ValueError:
            return None
        return note if isinstance(note, dict) else None

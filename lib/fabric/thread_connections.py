"""One database connection per thread, as both store backends keep them.

A store is used from many threads (the worker's sessions, the host's loops); neither
sqlite3 nor psycopg connections may run two statements at once, so each thread gets
its own, made on first use. The registry keeps every connection so that `close()` can
close them all, and closes those of threads that have ended whenever a new one is
made: a long-running host starts threads, and each connection holds a file handle or
a server session. A forked child gets connections of its own; those it inherited are
kept unreachable and never closed (closing one could end the parent's server session,
or checkpoint the parent's SQLite WAL).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

Connection = TypeVar("Connection")

# connections a forked child inherited; referenced forever so they are never closed
_INHERITED: list[object] = []


class ThreadConnections(Generic[Connection]):
    def __init__(
        self,
        connect: Callable[[], Connection],
        *,
        usable: Callable[[Connection], bool] = lambda conn: True,
        on_fork: Callable[[], None] = lambda: None,
    ) -> None:
        self._connect = connect
        self._usable = usable  # False for a connection closed under us: make a new one
        self._on_fork = on_fork  # the store drops what else a child must not share
        self._local = threading.local()
        self._owners: dict[int, tuple[Connection, threading.Thread]] = {}  # by id(connection)
        self._lock = threading.Lock()  # guards the registry
        self._pid = os.getpid()

    def current(self) -> Connection:
        """This thread's connection, made now if it has none (or none usable)."""
        if self._pid != os.getpid():
            self._forget_inherited()
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._usable(conn):
            return conn
        conn = self._local.conn = self._connect()
        ended = []
        with self._lock:
            for key, (old, owner) in list(self._owners.items()):
                if not owner.is_alive():
                    del self._owners[key]
                    ended.append(old)
            self._owners[id(conn)] = (conn, threading.current_thread())
        for old in ended:
            old.close()  # type: ignore[attr-defined]
        return conn

    def forget(self, conn: Connection) -> None:
        """Drop a broken connection: this thread's next `current()` makes a new one."""
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            self._owners.pop(id(conn), None)

    def take_all(self) -> list[Connection]:
        """Every connection of this process, for the store to close; the registry is
        left empty. In a forked child that never connected, that is none."""
        with self._lock:
            if self._pid != os.getpid():
                return []
            connections = [conn for conn, _ in self._owners.values()]
            self._owners = {}
        self._local = threading.local()
        return connections

    def _forget_inherited(self) -> None:
        with self._lock:
            self._pid = os.getpid()
            _INHERITED.extend(conn for conn, _ in self._owners.values())
            self._owners = {}
            self._local = threading.local()
        self._on_fork()

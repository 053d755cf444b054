"""The PostgreSQL store's change feed push: LISTEN/NOTIFY instead of polling.

Every commit that writes cells sends `NOTIFY agentctl_fabric_changes, '<space DID>'`
inside its transaction, so the notification is delivered exactly when the commit is
visible (PostgreSQL sends notifications of a transaction at its commit, in commit
order). A `ChangeListener` keeps one LISTEN connection per store handle on a daemon
thread, started by the first wait, and sets the events of whoever waits on that space.

Polling stays the fallback: until the listener is listening, or while it reconnects
after losing its connection, `listening` is False and waiters poll at their own
interval; every time it (re)starts listening it wakes all waiters, so a commit made
while it was not listening is found by their next read of the change feed.
"""

from __future__ import annotations

import logging
import threading

from lib.fabric.postgres_connect import connect

log = logging.getLogger(__name__)

CHANNEL = "agentctl_fabric_changes"
_POLL_STOP_SECONDS = 0.25  # how often the listener thread looks at its stop flag
_RECONNECT_SECONDS = 1.0


class ChangeListener:
    """One LISTEN connection, on its own thread, waking the waiters of a space."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._waiters: dict[str, set[threading.Event]] = {}
        self._guard = threading.Lock()
        self._listening = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    def start(self) -> None:
        """Start the listener thread once (later calls do nothing)."""
        with self._guard:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="postgres-change-listener", daemon=True
                )
                self._thread.start()

    def wait_until_listening(self, timeout: float) -> bool:
        self.start()
        return self._listening.wait(timeout)

    def register(self, space: str, event: threading.Event) -> None:
        with self._guard:
            self._waiters.setdefault(space, set()).add(event)

    def unregister(self, space: str, event: threading.Event) -> None:
        with self._guard:
            events = self._waiters.get(space)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiters[space]

    def close(self) -> None:
        """Stop the thread (it closes its connection within a quarter second)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(_POLL_STOP_SECONDS * 4)

    def _wake(self, space: str | None) -> None:
        with self._guard:
            if space is None:
                events = [e for group in self._waiters.values() for e in group]
            else:
                events = list(self._waiters.get(space, ()))
        for event in events:
            event.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with connect(self._url) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    self._wake(None)  # commits made before LISTEN: waiters read the feed
                    while not self._stop.is_set():
                        for notification in conn.notifies(timeout=_POLL_STOP_SECONDS):
                            self._wake(notification.payload)
            except Exception as exc:  # the waiters poll until it listens again
                log.debug("the change listener lost its connection: %s", exc)
            finally:
                self._listening.clear()
                self._wake(None)
            self._stop.wait(_RECONNECT_SECONDS)

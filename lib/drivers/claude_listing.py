"""One inventory of a Claude source, taken once and served page by page.

The SDK's `list_sessions(limit, offset)` reads every session file of every project it
covers on each call and only then slices out the page, so listing N sessions in pages of
100 reads the whole collection N/100 times, and a session written between two calls
shifts the pages under the cursor (one skipped, one listed twice). The driver therefore
takes the whole listing when the first page is asked for (offset 0) and serves the later
pages (decimal offsets, as before) from it. A cursor the snapshot cannot serve (another
process's, or one older than `MAX_AGE`) goes to the SDK with its offset, as the SDK
documents.

Each listed session's summary is also kept for one read: a read that follows the listing
uses it instead of asking the SDK again (`get_session_info` reads the file a second
time). It is taken once (a later read asks
the SDK) and only while fresh, and a prompt this driver runs forgets it, so a refresh
after a prompt never publishes the summary from before it.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from lib.drivers.base import DriverError
from lib.types import SessionSummary

# How long a listing serves later pages and reads. A sync lists and then reads at once;
# a page or read this long after its listing asks the SDK.
MAX_AGE = 300.0
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


def parse_offset(cursor: str | None) -> int:
    """The offset a cursor names: a decimal count of sessions, none for the first page."""
    if cursor is None:
        return 0
    if not isinstance(cursor, str) or not _DECIMAL.fullmatch(cursor):
        raise DriverError(
            "invalid-cursor",
            f"cursor {cursor!r} is not one this driver made: expected a decimal offset such as '100'",
        )
    return int(cursor)


class ListingSnapshot:
    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._infos: list[Any] | None = None
        self._taken_at = 0.0
        self._unread: dict[str, SessionSummary] = {}

    def replace(self, infos: list[Any]) -> None:
        """A new whole listing: the old one and its unread information are dropped."""
        with self._lock:
            self._infos = infos
            self._taken_at = self._clock()
            self._unread = {}

    def page(self, offset: int, limit: int) -> list[Any] | None:
        """Up to `limit` infos from `offset` of the current listing; None when there is no
        fresh listing to serve it from (the caller asks the SDK)."""
        with self._lock:
            if self._infos is None or not self._fresh() or offset > len(self._infos):
                return None
            return self._infos[offset : offset + limit]

    def finish(self) -> None:
        """The last page went out: later pages are not served from this listing (the
        information kept for reads stays until read or stale)."""
        with self._lock:
            self._infos = None

    def listed(self, summaries: list[SessionSummary]) -> None:
        """A page went out: its summaries are kept for the reads that follow."""
        with self._lock:
            for summary in summaries:
                self._unread[summary.native_session_id] = summary

    def take_summary(self, session_id: str) -> SessionSummary | None:
        """The listed summary of a session, once, while fresh; else None."""
        with self._lock:
            summary = self._unread.pop(session_id, None)
            return summary if summary is not None and self._fresh() else None

    def forget(self, session_id: str) -> None:
        """The session is changing (a prompt of ours runs on it): its listed information
        no longer describes it."""
        with self._lock:
            self._unread.pop(session_id, None)

    def _fresh(self) -> bool:
        return self._clock() - self._taken_at < MAX_AGE

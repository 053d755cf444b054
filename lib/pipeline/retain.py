"""The retain rule: which listed sessions need not be read again.

A session is retained (not read again) when its complete published copy, from the same
driver, shows every listed field the row shows as the inventory lists it now: update
time, title, archived and active. Archiving a Codex thread leaves its update time
alone, so the update time alone would keep an archived thread's row unarchived. The published copies come
from whoever knows them best: a publication's own prior index (read once, under the
publish lock) when the run publishes, else the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lib.fabric.target import PublishedSession
from lib.reconcile import RetainPredicate
from lib.session_key import session_key
from lib.types import SessionSummary


class RetainRule:
    """`published` is asked once, when the first summary is judged."""

    def __init__(
        self,
        published: Callable[[], Mapping[str, PublishedSession]],
        driver_of: Callable[[str], str | None],
    ) -> None:
        self._published = published
        self._driver_of = driver_of
        self._copies: Mapping[str, PublishedSession] | None = None

    def for_source(self, source_id: str) -> RetainPredicate:
        return lambda summary: self.retains(source_id, summary)

    def retains(self, source_id: str, summary: SessionSummary) -> bool:
        if summary.updated_at is None:
            return False
        if self._copies is None:
            self._copies = self._published()
        copy = self._copies.get(session_key(source_id, summary.native_session_id))
        return (
            copy is not None
            and copy.status == "complete"
            and copy.driver == self._driver_of(source_id)
            and (copy.updated_at, copy.title, copy.archived, copy.active)
            == (summary.updated_at, summary.title, summary.archived, summary.active)
        )

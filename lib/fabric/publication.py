"""One streaming publication: session graphs one at a time, then both indexes at once.

    with target.publication() as pub:
        pub.begin_source(descriptor, observation_sequence)
        pub.add_prepared(prepared)            # graph staged (or kept) now, committed in batches
        pub.add_retained(source_id, summary)  # the host claims the published copy is current
        pub.add_error(source_id, native_session_id, code, message)  # a failed read
        pub.end_source(outcome)               # inventory verdict: deletions, staleness
        summary = pub.commit()                # both indexes and the ordering, one transaction

Only rows (shallow, at most 12 message previews each; one table: touch_table.py) are
held, never a transcript, so memory is bounded by the largest session. The publish lock
is held only to read the prior index (at creation) and to commit the new one: session
graphs, and the cells of rows new to the index (early_rows.py), are written without it,
so a long collection does not hold up another publication. What this one observed is
kept as intents, resolved at commit against the index as it is then
(publication_resolve.py). Leaving the `with` block without committing publishes no
index (graphs already written stay unreachable).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from lib.fabric import index_store as indexes
from lib.fabric import publication_resolve as intents
from lib.fabric import session_index as idx
from lib.fabric.checkouts import CheckoutObserver
from lib.fabric.early_rows import EarlyRows
from lib.fabric.graph_batch import GraphBatch
from lib.fabric.index_roots import index_unchanged
from lib.fabric.index_store import IndexCells, PriorIndex
from lib.fabric.packed_previews import PreviewSpill, packed_row
from lib.fabric.publication_resolve import GUARD_DELETIONS, DeletionGuard, Touch, Verdict, resolve
from lib.fabric.publication_results import (
    Action,
    KeyStatuses,
    PreparedLike,
    PublicationError,
    PublicationSummary,
    PublishedOutcome,
)
from lib.fabric.resolved_rows import ResolvedRows
from lib.fabric.same_rows import same_row
from lib.fabric.session_graph import GraphTarget, write_session_graph
from lib.fabric.source_status import SourceState
from lib.fabric.store_lock import StoreLock
from lib.git_context import GitObservation
from lib.key_table import KeyTable
from lib.session_key import session_key
from lib.types import SessionSummary, SourceDescriptor, normalize_source_id


class Publication:
    def __init__(
        self,
        *,
        graphs: GraphTarget,
        cells: IndexCells,
        git: GitObservation,
        clock: Callable[[], datetime],
        allocate_sequence: Callable[[], int],
        preserve_untouched_status: bool,
        checkout_directories: Sequence[str] | None,
        lock: StoreLock,
        deletions: DeletionGuard = GUARD_DELETIONS,
    ) -> None:
        self._graphs = graphs
        self._cells = cells
        self._clock = clock
        self._allocate = allocate_sequence
        self._preserve = preserve_untouched_status
        self._directories = None if checkout_directories is None else list(checkout_directories)
        self._lock = lock
        self._deletions = deletions
        self._checkouts = CheckoutObserver(git)
        self._closed = False
        # a consistent prior: the one this process committed when one change-feed read
        # shows it current, else read under the lock (no index commit lands meanwhile)
        prior = indexes.cached_prior(graphs, cells)
        if prior is None:
            with lock:
                prior = indexes.read_prior(graphs, cells)
        self.prior: PriorIndex = prior
        self._ordering = self.prior.ordering
        # new rows' previews, kept on disk until their cells are written (packed_previews.py)
        self._spill = PreviewSpill()
        self._touches = intents.Touches(self._spill, self.prior.rows)  # tables: no object a session (touch_table)
        self._verdicts: dict[str, Verdict] = {}
        self._sources: dict[str, SourceState] = {}
        self._counts = {"written": 0, "unchanged": 0, "cells": 0}
        # new session graphs, committed several sessions at a time (graph_batch.py)
        self.batch = GraphBatch(graphs)
        self._early = EarlyRows(graphs, self.prior.row_links, self.batch.pending, self._touches)  # as it goes

    # -- sources ---------------------------------------------------------------------

    def begin_source(self, descriptor: SourceDescriptor | Mapping[str, Any], observation_sequence: int | None) -> None:
        """Start one source. Without a sequence the observation counts from now."""
        self._check_open()
        wire = descriptor.to_wire() if isinstance(descriptor, SourceDescriptor) else dict(descriptor)
        wire["id"] = normalize_source_id(wire["id"])
        known = self._sources.get(wire["id"])
        if known is not None:  # begun again: keep its state, take the newer descriptor
            known.descriptor = wire
            return
        sequence = observation_sequence if observation_sequence is not None else self._allocate()
        self._sources[wire["id"]] = SourceState(descriptor=wire, sequence=sequence)

    def source_failed(
        self, descriptor: SourceDescriptor | Mapping[str, Any], code: str, message: str
    ) -> None:
        """A source whose driver did not start: an error and an incomplete inventory."""
        self.begin_source(descriptor, None)
        source_id = self._source_id(descriptor)
        self._sources[source_id].record_error(
            {"stage": "start", "code": code, "message": message, "nativeSessionId": None}
        )
        self.end_source({"sourceId": source_id, "inventoryComplete": False, "complete": False})

    def end_source(self, outcome: Mapping[str, Any] | None, source_id: str | None = None) -> None:
        """The inventory verdict of one source (a CollectionOutcome wire dict).

        A complete inventory deletes the prior rows it does not list; an incomplete
        one keeps them, and untouched ones turn stale unless statuses are preserved.
        `outcome=None` is a targeted refresh: no verdict, the source row is kept.
        """
        self._check_open()
        sid = (outcome or {}).get("sourceId") or source_id
        if sid is None and len(self._sources) == 1:
            sid = next(iter(self._sources))
        sid = normalize_source_id(sid) if sid else sid
        source = self._sources.get(sid) if sid else None
        if source is None:
            raise PublicationError("source-not-begun", f"end_source for a source never begun: {sid}")
        source.ended = True
        if outcome is not None:
            for error in outcome.get("errors") or []:
                source.record_error(error)
            if isinstance(listed := outcome.get("listedSessionIds"), list) and listed:  # (a table stays itself)
                outcome = {**outcome, "listedSessionIds": KeyTable(listed)}
        self._verdicts[sid] = Verdict(source, outcome, self._now())

    # -- sessions --------------------------------------------------------------------

    def add_prepared(self, prepared: PreparedLike) -> PublishedOutcome:
        """Publish one read session: its graph now (unless unchanged), its row at commit."""
        self._check_open()
        source = self._source(prepared.source_id)
        key = prepared.key
        prior = self.prior.rows.get(key)
        if self._ordering.keeps_newer(key, source.sequence) or not self._ordering.may_add(
            prepared.source_id, source.sequence, has_live_row=prior is not None and idx.is_live(prior)
        ):
            return self._keep_newer(key, source, prior)
        source.read += 1
        driver = prepared.driver or source.descriptor["driver"]
        summary_wire = dict(prepared.summary)
        metadata = self._checkouts.observe(summary_wire.get("cwd"))
        summary = idx.with_git(idx.normalized_summary(summary_wire), metadata)
        if prior is not None:
            # A read that does not report a lifecycle field keeps the known one, and a
            # desktop start's pairing (`startedAs`, made once by the process that started
            # it) survives every later read by any process.
            for name in ("archived", "active", "startedAs"):
                if summary.get(name) is None and prior.get(name) is not None:
                    summary[name] = prior[name]
        messages = [idx.plain_message(m) for m in prepared.normalized_messages]
        now = self._now()
        unchanged = (
            prior is not None
            and prior["snapshotHash"] == prepared.snapshot_hash
            and prior["driver"] == driver
        )
        if unchanged:
            assert prior is not None
            manifest, manifest_hash = prior["manifest"], prior["manifestHash"]
            # the row's observedAt is when the published snapshot was read; keeping it
            # leaves an unchanged session's row cell untouched by this publication
            now = prior.get("observedAt") or now
            action: Action = "unchanged"
            self._counts["unchanged"] += 1
        else:
            write = write_session_graph(
                self._graphs,
                key=key,
                source_id=prepared.source_id,
                native_session_id=prepared.native_session_id,
                driver=driver,
                chunks=prepared.chunks,
                batch=self.batch,
                messages_stream=getattr(prepared, "messages_stream", None),
                manifest_fields={
                    "metadata": summary_wire.get("raw") or {},
                    "summary": summary,
                    "messages": prepared.normalized_messages,
                    "snapshot_hash": prepared.snapshot_hash,
                    "revision": prepared.revision,
                    "observed_at": now,
                    "complete": prepared.complete,
                },
            )
            manifest, manifest_hash = write.manifest, write.manifest_hash
            action = "written"
            self._counts["written"] += 1
            self._counts["cells"] += write.cells_written
        status = idx.read_status(prepared.complete)
        row = idx.session_row(
            key=key,
            source_id=prepared.source_id,
            native_session_id=prepared.native_session_id,
            driver=driver,
            summary=summary,
            capabilities=source.capabilities,
            messages=messages,
            manifest=manifest,
            snapshot_hash=prepared.snapshot_hash,
            manifest_hash=manifest_hash,
            status=status,
            observed_at=now,
        )
        if unchanged and same_row(row, prior):  # its prior row's equal: kept itself, nothing spilled
            self._touches[key] = self._prior_touch(source)
            return PublishedOutcome(key, action, status)
        # held until the commit with its previews packed: memory per row, not per message
        self._early.add(self._touches.hold(key, source.source_id, source.sequence, packed_row(row, self._spill)))
        return PublishedOutcome(key, action, status)

    def add_retained(
        self, source_id: str, summary: SessionSummary | Mapping[str, Any]
    ) -> PublishedOutcome:
        """A session the host retained unread, claiming its published copy is current.

        A complete published copy from the same driver backs the claim: the row keeps
        its graph and previews and takes current capabilities and Git context. Anything
        else is an error that makes the source's inventory incomplete, and marks the
        row (if there is one) partial, as a failed read does.
        """
        self._check_open()
        source = self._source(source_id)
        # the id and cwd are all it reads of the summary (no dump of the model)
        wire = {"nativeSessionId": summary.native_session_id, "cwd": summary.cwd} if isinstance(
            summary, SessionSummary) else dict(summary)
        key = session_key(source_id, wire["nativeSessionId"])
        prior = self.prior.rows.get(key)
        if prior is not None:
            key = prior["key"]  # the prior row's own (interned) string: no second copy per intent
        if self._ordering.keeps_newer(key, source.sequence):
            return self._keep_newer(key, source, prior)
        if prior is not None and self._backed(prior, source):
            source.retained += 1
            metadata = self._checkouts.observe(wire.get("cwd") or prior.get("cwd"))
            if idx.refresh_keeps(prior, source.capabilities, metadata):
                self._touches[key] = self._prior_touch(source)  # itself: the commit sees an unchanged row
            else:
                row = idx.with_status(
                    idx.refreshed_row(prior, capabilities=source.capabilities, metadata=metadata), "complete")
                self._touches.hold(key, source.source_id, source.sequence, row)
            return PublishedOutcome(key, "retained", "complete")
        source.unbacked = True
        source.record_error(
            {
                "stage": "retain",
                "code": "retained-without-published-copy",
                "message": f"session {wire.get('nativeSessionId')} was retained unread, "
                f"but no complete published copy backs it",
                "nativeSessionId": wire.get("nativeSessionId"),
            },
        )
        return self._mark_partial(key, source, prior, "retained-unbacked")

    def add_error(
        self,
        source_id: str,
        native_session_id: str | None,
        code: str,
        message: str,
        *,
        stage: str = "read",
    ) -> PublishedOutcome | None:
        """A failed read: the prior row (if any) is kept and marked partial."""
        self._check_open()
        source = self._source(source_id)
        source.record_error(
            {"stage": stage, "code": code, "message": message, "nativeSessionId": native_session_id},
        )
        if not native_session_id:
            return None
        key = session_key(source_id, native_session_id)
        prior = self.prior.rows.get(key)
        if self._ordering.keeps_newer(key, source.sequence):
            return self._keep_newer(key, source, prior)
        return self._mark_partial(key, source, prior, "failed")

    # -- commit ----------------------------------------------------------------------

    def commit(self) -> PublicationSummary:
        """Take the publish lock, resolve this publication's intents against the index as
        it is now, and write both indexes and the ordering state in one transaction."""
        self._check_open()
        try:
            for sid, source in self._sources.items():
                if not source.ended:
                    self.end_source(None, sid)
            self.batch.flush()  # every graph a row links is committed before the index
            self._early.end()  # the rows not yet written early are the commit's
            with self._lock:
                current = indexes.prior_is_current(self._graphs, self._cells, self.prior)
                prior = self.prior if current else indexes.read_prior(self._graphs, self._cells)
                resolved = resolve(prior, self._touches, self._verdicts, preserve_untouched_status=self._preserve,
                                   deletions=self._deletions, read=self.prior.rows)
                rows, self._touches, self._verdicts = resolved.rows, intents.Touches(), {}  # resolved: freed, listed IDs too
                sources = {**{r["sourceId"]: r for r in prior.sources}, **resolved.source_rows}
                generated_at = self._clock()
                live_roots = [root for status, root in rows.statuses() if status != "deleted" and root]  # no row made
                checkouts = self._checkouts.rows(live_roots=live_roots, prior=prior.checkouts, directories=self._directories)
                ordering = prior.ordering.merged(resolved.recorded)
                resolved.recorded.sessions.clear()  # merged: an entry a session, not held through the commit
                statuses, live = KeyStatuses(rows), sum(1 for status, _ in rows.statuses() if status != "deleted")
                if self._preserve and index_unchanged(prior, rows, list(sources.values()), checkouts, generated_at):
                    cells = indexes.commit_ordering(self._graphs, self._cells, prior, ordering)  # no root built
                else:
                    recent, complete, window = idx.index_values(
                        owner_did=self._graphs.owner, generated_at=generated_at, generation=prior.generation + 1,
                        sessions=rows, sources=sources.values(), checkouts=checkouts, known=prior.window)
                    rows = resolved.rows = ResolvedRows()  # the values hold them: commit_indexes drops them
                    cells = indexes.commit_indexes(
                        self._graphs, self._cells, prior, recent, complete, ordering,
                        ordering_only_when_unchanged=self._preserve, window=window, early_rows=self._early)
                generation = self._graphs.committed[self._cells.all].generation  # kept when unchanged
        finally:
            self.close()
        return PublicationSummary(
            generation=generation,
            session_count=live,
            statuses=statuses,
            sources=list(sources.values()),
            written=self._counts["written"],
            unchanged=self._counts["unchanged"],
            cells_written=self._counts["cells"] + cells,
            status_changes=[PublishedOutcome(key, status, status)  # type: ignore[arg-type]
                            for key, status in sorted(resolved.status_changes.items())],
            suspect_sources=dict(resolved.suspect_sources),
        )

    def close(self) -> None:
        """Abort (when not committed): no index is written, staged graphs are dropped."""
        self._closed = True
        self.batch.discard()
        self._early.discard()
        self._spill.close()

    def __enter__(self) -> Publication:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ---------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise PublicationError("publication-closed", "this publication is already committed or closed")

    def _now(self) -> str:
        return idx.iso(self._clock())

    def _source_id(self, descriptor: SourceDescriptor | Mapping[str, Any]) -> str:
        return normalize_source_id(descriptor.id if isinstance(descriptor, SourceDescriptor) else descriptor["id"])

    def _source(self, source_id: str) -> SourceState:
        source = self._sources.get(normalize_source_id(source_id))
        if source is None:
            raise PublicationError("source-not-begun", f"no begin_source for source {source_id}")
        return source

    def _backed(self, prior: Mapping[str, Any], source: SourceState) -> bool:
        if prior.get("driver") != source.descriptor.get("driver"):
            return False  # a reconfigured driver: the copy is another provider's
        if prior.get("status") in ("complete", "deleted"):
            return prior["status"] == "complete"
        # stale or partial: backed when the manifest it links is itself complete
        document = self._graphs.store.read(self._graphs.space, prior["manifest"].id)
        return document is not None and isinstance(document.value, dict) and document.value.get("complete") is True

    def _prior_touch(self, source: SourceState) -> Touch:
        """A retained or unchanged session's touch (the touches hold one for all of a source's)."""
        return Touch(source.source_id, source.sequence, "prior")

    def _keep_newer(self, key: str, source: SourceState, prior: Mapping[str, Any] | None) -> PublishedOutcome:
        self._touches[key] = Touch(source.source_id, source.sequence, "keep")
        return PublishedOutcome(key, "skipped-newer", prior.get("status") if prior else None)

    def _mark_partial(self, key: str, source: SourceState, prior: Mapping[str, Any] | None,
                      action: Action) -> PublishedOutcome:
        self._touches[key] = Touch(source.source_id, source.sequence, "partial")
        return PublishedOutcome(key, action, "partial" if prior is not None else None)


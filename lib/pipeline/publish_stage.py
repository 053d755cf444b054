"""The publish stage: records in, Fabric state out, one `published` record per session.

It wraps the prepare stage (which wraps the read stage), so it accepts the records of
every earlier stage: `summary` records are read, `snapshot` records are prepared, and
`prepared`, `retained`, `error`, `source` and `outcome` records are published.
`agentctl sync` runs the same stages in one process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from lib.errors import CodedError
from lib.fabric.prior_table import row_fields
from lib.fabric.publication import Publication
from lib.fabric.publication_results import PublicationError, PublicationSummary, PublishedOutcome
from lib.fabric.target import FabricTarget, PublishedSession, published_sessions_of
from lib.git_context import GitObservation
from lib.memory_release import release_freed_memory
from lib.pipeline.prepare_stage import PrepareStage
from lib.pipeline.read_stage import first_error
from lib.pipeline.records import Item, SummaryItem, data_of, error_record, kind_of
from lib.prepare import PreparedSession
from lib.record_spill import RecordSpill
from lib.types import SessionSummary, SourceDescriptor, normalize_source_id


class PublicationSlot:
    """The run's one publication, opened when first needed (its prior index read under
    the publish lock). The publish stage feeds it; the retain rule reads its prior
    index, so retention is judged by what this publication itself read.

    `discover` is the run's checkout scan (lib/checkout_discovery.py), called once,
    before the publication opens: its list replaces the discovery checkout rows, and
    its failure (raised) ends the run before anything is committed. Without it the
    publication keeps the prior discovery rows."""

    def __init__(
        self,
        target: FabricTarget,
        git: GitObservation,
        *,
        preserve_untouched_status: bool = False,
        accept_deletions: bool = False,
        discover: Callable[[], Sequence[str]] | None = None,
    ) -> None:
        self._target = target
        self._git = git
        self._preserve = preserve_untouched_status
        self._accept_deletions = accept_deletions
        self._discover = discover
        self._directories: list[str] | None = None
        self._publication: Publication | None = None

    @property
    def publication(self) -> Publication:
        if self._publication is None:
            if self._discover is not None and self._directories is None:
                self._directories = list(self._discover())  # once per run
            self._publication = self._target.publication(
                git=self._git, preserve_untouched_status=self._preserve, accept_deletions=self._accept_deletions,
                checkout_directories=self._directories,
            )
        return self._publication

    def observation_origin(self) -> str:
        return self._target.observation_origin()

    def begin_session_observation(self) -> int:
        return self._target.begin_session_observation()

    def published_sessions(self) -> Mapping[str, PublishedSession]:
        """The published copies as this publication read them, under the publish lock
        (each built when the retain rule asks for it: nothing per row is held)."""
        return PublishedCopies(self.publication.prior.rows)

    def commit(self) -> PublicationSummary:
        summary = self.publication.commit()
        self._publication = None
        return summary

    def close(self) -> None:
        if self._publication is not None:
            self._publication.close()  # an unfinished publication commits nothing
            self._publication = None


class PublishedCopies(Mapping[str, PublishedSession]):
    """A publication's prior rows as published copies, each made when looked up."""

    def __init__(self, rows: Mapping[str, Mapping[str, Any]]) -> None:
        self._rows = rows
        self._last: dict[str, PublishedSession] = {}  # a session is judged twice (read-ahead, then read)

    def __getitem__(self, key: str) -> PublishedSession:
        copy = self._last.get(key)
        if copy is None:
            # the row's fields at once (a packed row's block read once, not field by field,
            # and neither copied nor given its previews: a copy needs none)
            copy = published_sessions_of((row_fields(self._rows, key),))[key]
            if len(self._last) >= 2:
                del self._last[next(iter(self._last))]
            self._last[key] = copy
        return copy

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


class PublishStage:
    """Feeds one streaming publication; commits the indexes at the end."""

    stage = "publish"

    def __init__(
        self,
        prepare_stage: PrepareStage,
        slot: PublicationSlot,
        descriptor_of: Callable[[str], SourceDescriptor],
        *,
        after_reads: Callable[[], None] | None = None,
    ) -> None:
        self._inner = prepare_stage
        self._slot = slot
        self._descriptor_of = descriptor_of
        # called once the stages before this one have finished (every read answered), before
        # the commit: `sync` stops its providers there, their exit beside the index commit
        self._after_reads = after_reads
        self.summary: PublicationSummary | None = None
        self._begun: set[str] = set()
        # `published` records wait for the commit: a session is published only once the
        # index that reaches it is committed (a failed commit publishes nothing). Small
        # (key, action, status), like the index rows the publication holds anyway.
        # Held as (key, action, status) tuples, the record made when it is yielded, in
        # a spill file (record_spill.py): nothing per session stays in memory for them.
        self._published = RecordSpill()

    @property
    def publication(self) -> Publication:
        return self._slot.publication

    def handle(self, item: Item) -> Iterator[Item]:
        for out in self._inner.handle(item):
            yield from self._publish(out)

    def finish(self) -> Iterator[Item]:
        for out in self._inner.finish():
            yield from self._publish(out)
        if self._after_reads is not None:
            self._after_reads()
        release_freed_memory()  # what the reads freed, before the commit's large allocations
        self.summary = self._slot.commit()
        for key, action, status in self._published:
            yield published_record({"key": key, "action": action, "status": status})
        self._published.clear()
        for change in self.summary.status_changes:  # rows the verdicts marked deleted or stale
            yield published_record(change.to_wire())
        for source_id, warning in self.summary.suspect_sources.items():
            yield error_record(self.stage, "suspect-deletions", warning, source_id=source_id)
        yield publication_record(self.summary)

    def close(self) -> None:
        self._inner.close()
        self._slot.close()

    # -- one record ---------------------------------------------------------------------

    def _publish(self, item: Item) -> Iterator[Item]:
        kind = kind_of(item)
        try:
            if isinstance(item, PreparedSession):
                self._begin_implicitly(item.source_id)
                self._hold(self.publication.add_prepared(item))
            elif kind == "prepared":
                prepared = PreparedSession.from_record(data_of(item))
                self._begin_implicitly(prepared.source_id)
                self._hold(self.publication.add_prepared(prepared))
            elif kind == "source":
                yield from self._source(data_of(item))
            elif isinstance(item, SummaryItem) and kind == "retained":  # retained in this process
                source_id = normalize_source_id(item.source_id)
                self._begin_implicitly(source_id)
                self._hold(self.publication.add_retained(source_id, item.summary))
            elif kind == "retained":
                self._retained(data_of(item))
            elif kind == "error":
                self._error(data_of(item))
                yield item
            elif kind == "outcome" and data_of(item).get("stage") == "read":
                data = data_of(item)
                source_id = normalize_source_id(str(data.get("sourceId", "")))
                self._begin_implicitly(source_id)
                if data.get("targeted"):  # named sessions only: no inventory verdict
                    self.publication.end_source(None, source_id)
                else:
                    self.publication.end_source({**data, "sourceId": source_id})
                yield item
            else:
                yield item
        except (ValueError, ValidationError, PublicationError) as exc:
            data = data_of(item) if not isinstance(item, PreparedSession) else {}
            yield error_record(
                self.stage, getattr(exc, "code", "bad-input"),
                first_error(exc) if isinstance(exc, ValidationError) else getattr(exc, "message", None) or str(exc),
                source_id=data.get("sourceId"), native_session_id=data.get("nativeSessionId"),
            )

    def _hold(self, outcome: PublishedOutcome) -> None:
        self._published.add((outcome.key, outcome.action, outcome.status))

    def _source(self, data: dict[str, Any]) -> Iterator[Item]:
        descriptor = SourceDescriptor.model_validate(data.get("source"))
        descriptor = descriptor.model_copy(update={"id": normalize_source_id(descriptor.id)})
        sequence = data.get("observationSequence")
        if sequence is not None and (type(sequence) is not int or sequence < 1):
            raise BadSourceRecord(
                "bad-input",
                f"source record of {descriptor.id}: observationSequence must be a positive "
                f"integer, not {sequence!r}",
            )
        record = {**data, "source": descriptor.to_wire()}
        origin = self._slot.observation_origin()
        if sequence is not None and data.get("observationOrigin") != origin:
            # Allocated in another store or space: it orders nothing here. Ordering of
            # this source starts now, and the passed-through record says so.
            sequence = self._slot.begin_session_observation()
            record.update(observationSequence=sequence, observationOrigin=origin, observationReallocated=True)
        self._begun.add(descriptor.id)
        self.publication.begin_source(descriptor, sequence)
        yield record

    def _retained(self, data: dict[str, Any]) -> None:
        source_id = normalize_source_id(str(data.get("sourceId", "")))
        summary = SessionSummary.model_validate(data.get("summary"))
        self._begin_implicitly(source_id)
        self._hold(self.publication.add_retained(source_id, summary))

    def _error(self, data: dict[str, Any]) -> None:
        # A session that failed to be read or prepared is a failed read of that session
        # (its row partial, its source incomplete); a bad input line names no session
        # and stays an error record of the stream.
        source_id = data.get("sourceId")
        stage = data.get("stage")
        if stage not in ("read", "prepare", "list", "start") or not source_id:
            return
        source_id = normalize_source_id(source_id)
        if stage == "start":
            self._begun.add(source_id)
            self.publication.source_failed(self._descriptor_of(source_id), data["code"], data["message"])
            return
        self._begin_implicitly(source_id)
        if stage in ("read", "prepare") and data.get("nativeSessionId"):
            self.publication.add_error(source_id, data["nativeSessionId"], data["code"], data["message"],
                                       stage=stage)

    def _begin_implicitly(self, source_id: str) -> None:
        """Records of a source whose `source` record never came (`read ID | publish`):
        the configured descriptor, observed from now."""
        if source_id not in self._begun:
            self._begun.add(source_id)
            self.publication.begin_source(self._descriptor_of(source_id), None)


class BadSourceRecord(CodedError, ValueError):
    """A `source` record this stage cannot use (an error record; the source's other
    records still go through)."""


def published_record(outcome: dict[str, Any]) -> dict[str, Any]:
    return {"record": "published", **outcome}


def publication_record(summary: PublicationSummary) -> dict[str, Any]:
    counts = summary.statuses.counts()  # no key made a row
    return {
        "record": "publication",
        "generation": summary.generation,
        "sessionCount": summary.session_count,
        "written": summary.written,
        "unchanged": summary.unchanged,
        "cellsWritten": summary.cells_written,
        "statuses": dict(sorted(counts.items())),
        "sources": summary.sources,
    }

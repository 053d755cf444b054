"""The read stage: reads the sessions that `summary` records (or explicit ids) name.

Each source's reads go through collection's `SessionReads` (lib/reconcile.py), the one
read path: the retain rule, the cancellation fence, the lifecycle merge, read-error
recording and the completeness verdict are the ones `collect_source` uses. The stage
adds the record stream around them: Git context on every summary, and one `outcome`
per source that joins the inventory outcome from `list` with its own reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pydantic import ValidationError

from lib.drivers.base import DriverError
from lib.git_context import GitObservation
from lib.key_table import KeyTable
from lib.memory_release import release_after_large_session
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.read_ahead import ReadAhead
from lib.pipeline.records import (
    Item,
    ReadSession,
    SummaryItem,
    collection_error_record,
    data_of,
    error_record,
    kind_of,
    source_record,
)
from lib.pipeline.retain import RetainRule
from lib.reconcile import CollectionOutcome, SessionReads, SignalSource
from lib.types import SessionSummary, SourceDescriptor, normalize_source_id


class ReadStage:
    stage = "read"

    def __init__(
        self,
        drivers: DriverPool,
        git: GitObservation,
        *,
        retain: RetainRule | None = None,
        signal: SignalSource = None,
        read_ahead: ReadAhead | None = None,
    ) -> None:
        self._drivers = drivers
        self._ahead = read_ahead  # `sync`: the next session is read while this one is published
        self._git = git
        self._retain = retain
        self._signal = signal
        self._sources: dict[str, SessionReads] = {}
        self._concluded: set[str] = set()
        # Capabilities a driver learns while reading (ACP modes and options) reach the
        # publication: the source record passed through, and the drivers that read.
        self._source_records: dict[str, dict[str, Any]] = {}
        self._read_drivers: dict[str, Any] = {}

    def handle(self, item: Item) -> Iterator[Item]:
        kind = kind_of(item)
        if isinstance(item, SummaryItem) and kind == "summary":  # listed in this process: valid
            yield from self._read(normalize_source_id(item.source_id), item.summary)
        elif kind == "summary":
            yield from self._handle_summary(data_of(item))
        elif kind == "outcome" and data_of(item).get("stage") == "list":
            joined = self._joined_outcome(data_of(item))
            yield from self._learned_source(normalize_source_id(str(data_of(item).get("sourceId", ""))))
            yield joined
        else:
            if kind == "source" and isinstance(data_of(item).get("source"), dict):
                data = data_of(item)
                self._source_records[normalize_source_id(str(data["source"].get("id", "")))] = data
            yield item

    def finish(self) -> Iterator[Item]:
        """Outcomes for sources whose reads had no inventory outcome (explicit ids): a
        targeted refresh, with no inventory verdict."""
        for source_id, reads in self._sources.items():
            if source_id not in self._concluded:
                reads.outcome.targeted = True
                reads.outcome.conclude(False)
                yield from self._learned_source(source_id)
                yield outcome_record(reads.outcome)

    def close(self) -> None:
        """The driver pool belongs to whoever runs the stages; a read begun ahead is dropped."""
        if self._ahead is not None:
            self._ahead.close()

    def read_ids(
        self,
        source: SourceDescriptor,
        session_ids: list[str],
        observation_sequence: int | None = None,
        observation_origin: str | None = None,
    ) -> Iterator[Item]:
        """Named sessions of one source: its `source` record (with the observation
        sequence allocated before these reads), then each session."""
        record = source_record(source, observation_sequence, observation_origin)
        self._source_records[normalize_source_id(source.id)] = record
        yield record
        for session_id in session_ids:
            yield from self._read(source.id, SessionSummary(native_session_id=session_id))

    # -- internals --------------------------------------------------------------------

    def _handle_summary(self, data: dict[str, Any]) -> Iterator[Item]:
        source_id = data.get("sourceId")
        try:
            summary = SessionSummary.model_validate(data.get("summary"))
        except ValidationError as exc:
            yield error_record(self.stage, "bad-input", f"summary record: {first_error(exc)}", source_id=source_id)
            return
        if not isinstance(source_id, str) or not source_id.strip():
            yield error_record(self.stage, "bad-input", "summary record has no sourceId",
                               native_session_id=summary.native_session_id)
            return
        yield from self._read(normalize_source_id(source_id), summary)

    def _reads(self, source_id: str) -> SessionReads:
        reads = self._sources.get(source_id)
        if reads is None:
            retain = self._retain.for_source(source_id) if self._retain is not None else None
            driver: Callable[[], Any] = lambda: self._drivers.require(source_id)  # noqa: E731
            if self._ahead is not None:
                ahead = self._ahead
                driver = lambda: ahead.reader(source_id, self._drivers.require(source_id))  # noqa: E731
            reads = SessionReads(source_id, driver, signal=self._signal, retain=retain)
            self._sources[source_id] = reads
        return reads

    def _read(self, source_id: str, summary: SessionSummary) -> Iterator[Item]:
        release_after_large_session()  # a large session before this one is all freed now
        reads = self._reads(source_id)
        taken = reads.take(summary)
        if self._ahead is not None:
            self._start_next(source_id, reads)
        if taken.error is not None:
            yield collection_error_record(self.stage, taken.error)
        elif taken.summary is not None:
            yield SummaryItem("retained", source_id, self._git.enrich(taken.summary))
        else:
            snapshot = taken.snapshot
            assert snapshot is not None
            del taken
            driver = self._drivers.get(source_id)
            assert not isinstance(driver, DriverError)  # it just read this session
            self._read_drivers[source_id] = driver
            snapshot.summary = self._git.enrich(snapshot.summary)
            yield ReadSession(source_id, driver.source.driver, snapshot)

    def _learned_source(self, source_id: str) -> Iterator[Item]:
        """The source record again, with the driver's current descriptor, when reading
        taught the driver capabilities the record passed through does not show (only
        capabilities count: a provider version known once started changes nothing)."""
        driver = self._read_drivers.get(source_id)
        if driver is None:
            return
        passed = self._source_records.get(source_id)
        current = driver.source.to_wire()
        if passed is not None and (passed.get("source") or {}).get("capabilities") == current["capabilities"]:
            return
        record = dict(passed) if passed is not None else source_record(driver.source, None, None)
        record["source"] = current
        yield record

    def _start_next(self, source_id: str, reads: SessionReads) -> None:
        driver = self._drivers.get(source_id)
        if self._ahead is not None and not isinstance(driver, DriverError):
            self._ahead.start_next(source_id, driver, reads.will_read)

    def _joined_outcome(self, inventory: dict[str, Any]) -> dict[str, Any]:
        """The list stage's inventory outcome joined with this stage's reads."""
        source_id = normalize_source_id(str(inventory.get("sourceId", "")))
        ids = inventory.get("listedSessionIds")
        table = ids if isinstance(ids, KeyTable) else None  # the list stage's own: passed on as it is
        fields = {**inventory, "sourceId": source_id}
        if table is not None:
            fields["listedSessionIds"] = []  # not validated into a list: the record gets the table
        try:
            listed = CollectionOutcome.model_validate(fields)
        except ValidationError as exc:
            return error_record(self.stage, "bad-input", f"outcome record: {first_error(exc)}", source_id=source_id)
        outcome = self._reads(source_id).outcome
        outcome.pages, outcome.listings, outcome.listed = listed.pages, listed.listings, listed.listed
        outcome.listed_session_ids = listed.listed_session_ids
        outcome.errors[:0] = listed.errors  # the inventory's errors first, as they happened
        self._concluded.add(source_id)
        outcome.conclude(listed.inventory_complete)
        record = outcome_record(outcome)
        if table is not None:
            record["listedSessionIds"] = table
        # the ids go on with the record (the publication keeps them as one table): the stage
        # holds none, a string an id, through the commit (issue 14 goal 4)
        outcome.listed_session_ids = []
        return record


def outcome_record(outcome: CollectionOutcome) -> dict[str, Any]:
    return {"record": "outcome", "stage": "read", **outcome.to_wire()}


def first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "value"
    return f"{where}: {first['msg']}"

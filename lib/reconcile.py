"""Collection: walk one source's inventory and read its sessions, one at a time.

`stream_source` is the primitive: a generator the consumer advances, so at most one
snapshot is alive in collection at once (memory stays bounded by the largest session).
`collect_source` materialises the same stream for callers that want everything.
Preparation (keys, chunks, hashes) lives in `lib/prepare.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Literal, NoReturn, TypeVar

from pydantic import Field

from lib.drivers.base import AgentDriver, Cancelled, CancelSignal, DriverError
from lib.key_table import KeyTable
from lib.types import (
    NativeSessionSnapshot,
    SessionPage,
    SessionSummary,
    SourceDescriptor,
    WireModel,
)

# A collection stops (inventory incomplete) before keeping a page that would raise the
# listings, repeats included, above this many. It bounds memory and runaway providers.
LISTING_LIMIT = 100_000

CollectionStage = Literal["list", "read", "retain"]
SignalSource = CancelSignal | Callable[[], CancelSignal | None] | None
RetainPredicate = Callable[[SessionSummary], bool]
T = TypeVar("T")


class CollectionError(WireModel):
    """One structured collection failure. `retain` errors are recorded by the target."""

    stage: CollectionStage
    source_id: str
    native_session_id: str | None = None
    code: str
    message: str


class CollectionOutcome(WireModel):
    """Counts, errors and completeness of one source's collection, updated as it runs.

    `complete` and `inventory_complete` stay False until the stream is exhausted.
    `listed_session_ids` holds every distinct listed id in listing order (read or
    retained): a publisher needs it to mark missing sessions deleted, and it is bounded
    by LISTING_LIMIT. A `SourceStream` keeps them as one table (`listed_ids`, a
    `KeyTable`) that the list stage's outcome record carries as it is; `collect_source`
    sets this list from it.
    """

    source_id: str
    complete: bool = False
    inventory_complete: bool = False
    pages: int = 0
    listings: int = 0
    listed: int = 0
    read: int = 0
    retained: int = 0
    incomplete_snapshots: int = 0
    errors: list[CollectionError] = Field(default_factory=list)
    listed_session_ids: list[str] = Field(default_factory=list)
    # reads of named sessions with no inventory at all (`agentctl read --source S ID`):
    # a targeted refresh, which changes no other session's status
    targeted: bool = False

    def has_errors(self, stage: CollectionStage) -> bool:
        return any(error.stage == stage for error in self.errors)

    def conclude(self, inventory_complete: bool) -> None:
        """The verdict, the one place it is computed: the inventory is complete when it
        was enumerated without error; the collection, when besides every read succeeded
        and every snapshot is complete."""
        self.inventory_complete = inventory_complete
        self.complete = inventory_complete and not self.has_errors("read") and self.incomplete_snapshots == 0


@dataclass(frozen=True)
class StreamItem:
    """One step of a stream: exactly one of snapshot, summary (retained) or error is set."""

    kind: Literal["snapshot", "retained", "error"]
    snapshot: NativeSessionSnapshot | None = None
    summary: SessionSummary | None = None
    error: CollectionError | None = None


@dataclass
class CollectedSource:
    """A materialised collection: every snapshot, retained summary and error."""

    source: SourceDescriptor
    outcome: CollectionOutcome
    snapshots: list[NativeSessionSnapshot] = field(default_factory=list)
    retained: list[SessionSummary] = field(default_factory=list)

    @property
    def errors(self) -> list[CollectionError]:
        return self.outcome.errors

    @property
    def complete(self) -> bool:
        return self.outcome.complete


def merge_inventory_lifecycle(
    snapshot: NativeSessionSnapshot, listed: SessionSummary
) -> NativeSessionSnapshot:
    """Keep inventory `archived`/`active` where the read left them null; the read wins."""
    update = {
        name: getattr(listed, name)
        for name in ("archived", "active")
        if getattr(snapshot.summary, name) is None and getattr(listed, name) is not None
    }
    if not update:
        return snapshot
    summary = snapshot.summary.model_copy(update=update)
    return snapshot.model_copy(update={"summary": summary})


class SessionReads:
    """The per-session half of collecting one source: retain or read one listed summary,
    each provider call fenced by the signal, counted into `outcome`.

    `SourceStream` feeds it from the provider's inventory; the pipeline's read stage
    feeds it from `summary` records. `driver` is called for each read, so a driver is
    started only when a session is actually read (a failed start is that read's error).
    """

    def __init__(
        self,
        source_id: str,
        driver: Callable[[], AgentDriver],
        *,
        signal: SignalSource = None,
        retain: RetainPredicate | None = None,
        outcome: CollectionOutcome | None = None,
    ) -> None:
        self.source_id = source_id
        self.outcome = outcome or CollectionOutcome(source_id=source_id)
        self._driver = driver
        self._signal = signal
        self._retain = retain

    def will_read(self, summary: SessionSummary) -> bool:
        """Whether `take` would read this summary's session (the retain rule keeps it not)."""
        return self._retain is None or not self._retain(summary)

    def take(self, summary: SessionSummary) -> StreamItem:
        """Retain `summary` (the predicate accepts it) or read its session."""
        if self._retain is not None and self._retain(summary):
            self.outcome.retained += 1
            return StreamItem(kind="retained", summary=summary)
        session_id = summary.native_session_id
        snapshot = self.fenced("read", session_id, lambda: self._driver().read_session(session_id))
        if isinstance(snapshot, CollectionError):
            return StreamItem(kind="error", error=snapshot)
        snapshot = merge_inventory_lifecycle(snapshot, summary)
        self.outcome.read += 1
        if not snapshot.complete:
            self.outcome.incomplete_snapshots += 1
        return StreamItem(kind="snapshot", snapshot=snapshot)

    def fenced(self, stage: CollectionStage, session_id: str | None, call: Callable[[], T]) -> T | CollectionError:
        """One provider call, the signal checked before and after it; a failure is
        recorded with a stable code, a cancellation raised."""
        self._check_signal(stage, session_id)
        try:
            result = call()
        except Cancelled:
            self._record_cancelled(stage, session_id)
            raise
        except Exception as exc:  # noqa: BLE001 -- recorded with a stable code
            self._check_signal(stage, session_id)
            return self.record(stage, session_id, *error_code_and_message(exc, f"{stage}-failed"))
        self._check_signal(stage, session_id)
        return result

    def record(self, stage: CollectionStage, session_id: str | None, code: str, message: str) -> CollectionError:
        error = CollectionError(
            stage=stage, source_id=self.source_id, native_session_id=session_id, code=code, message=message
        )
        self.outcome.errors.append(error)
        return error

    def _check_signal(self, stage: CollectionStage, session_id: str | None) -> None:
        signal = self._signal() if callable(self._signal) else self._signal
        if signal is not None and signal.cancelled:
            self._record_cancelled(stage, session_id)
            raise Cancelled()

    def _record_cancelled(self, stage: CollectionStage, session_id: str | None) -> None:
        self.record(stage, session_id, "cancelled", f"collection of source {self.source_id} was cancelled")


class SourceStream(Iterator[StreamItem]):
    """Iterator over one source's collection. Advance it to make the next provider call."""

    def __init__(
        self,
        driver: AgentDriver,
        signal: SignalSource = None,
        retain: RetainPredicate | None = None,
        *,
        listing_limit: int = LISTING_LIMIT,
        keep_retained: bool = True,
    ) -> None:
        self.driver = driver
        self.source_id = driver.source.id
        self.reads = SessionReads(self.source_id, lambda: driver, signal=signal, retain=retain)
        self._signal = signal
        self.outcome = self.reads.outcome
        self.retained: list[SessionSummary] = []
        # False: a consumer that takes each retained summary from its item (the list
        # stage) keeps none here: 25,000 summaries with their raw metadata were most of
        # what a sync's memory grew by per session (issue 14 goal 4, session 23)
        self._keep_retained = keep_retained
        self.finished = False
        self._listing_limit = listing_limit
        # every distinct listed id, in listing order, as one table (lib/key_table.py), not
        # a string, a set entry and a list slot an id while the sessions are read (issue 14
        # goal 4: 25,000 of them in a first sync); `listed_ids` once the walk ends, which
        # the list stage's outcome record carries as it is (lib/pipeline/listing.py)
        self._listed = KeyTable()
        self.listed_ids = KeyTable()
        self._items = self._run()

    @property
    def source(self) -> SourceDescriptor:
        """The driver's current descriptor (ACP learns capabilities while reading)."""
        return self.driver.source

    def __iter__(self) -> SourceStream:
        return self

    def __next__(self) -> StreamItem:
        return next(self._items)

    def close(self) -> None:
        """Stop early; the outcome stays incomplete."""
        self._items.close()

    # -- the walk -------------------------------------------------------------------

    def _run(self) -> Iterator[StreamItem]:
        try:
            yield from self._walk()
        finally:  # ended, stopped or failed: the outcome lists what was listed
            # as the table itself (`listed_ids`), not a list: a string an id, a list and a
            # second table made of them were the listing idle sync's peak (issue 14 goal 4)
            self.listed_ids, self._listed = self._listed, KeyTable()

    def _walk(self) -> Iterator[StreamItem]:
        requested: set[str] = set()
        enumerated = False
        # One page ahead: page N+1 is asked for as soon as page N names its cursor, so the
        # provider makes it while page N's summaries go down the stages (a driver that
        # cannot serve two calls at once lists it when it is taken, base.py).
        upcoming = self._begin_page(None)
        while True:
            page = self.reads.fenced("list", None, upcoming)
            if isinstance(page, CollectionError):
                yield StreamItem(kind="error", error=page)
                break
            if self.outcome.listings + len(page.sessions) > self._listing_limit:
                yield self._error(
                    "list",
                    None,
                    "listing-limit",
                    f"source {self.source_id} listed more than {self._listing_limit} "
                    f"sessions; the remaining pages were not collected",
                )
                break
            self.outcome.pages += 1
            self.outcome.listings += len(page.sessions)
            next_cursor = page.next_cursor
            repeated = bool(next_cursor) and next_cursor in requested
            if next_cursor and not repeated:
                requested.add(next_cursor)
                upcoming = self._begin_page(next_cursor)
            summaries = page.sessions
            del page  # only the summaries are needed while this page's sessions are read
            for summary in summaries:
                yield from self._take(summary)
            del summaries
            if not next_cursor:  # absent or empty: the provider has no more pages
                enumerated = True
                break
            if repeated:
                yield self._error(
                    "list",
                    None,
                    "repeated-cursor",
                    f"source {self.source_id} returned cursor {next_cursor!r} again; "
                    f"enumeration stopped",
                )
                break
        # A duplicate listing is an inventory error too: under offset paging it means the
        # listing shifted, so another session may have been skipped.
        self.outcome.conclude(enumerated and not self.outcome.has_errors("list"))
        self.finished = True

    def _begin_page(self, cursor: str | None) -> Callable[[], SessionPage]:
        """The driver asked for the page at `cursor`; a failure to ask is raised when the
        page is taken, inside the fence, where a direct call's failure would be."""
        signal = self._signal() if callable(self._signal) else self._signal
        if signal is not None and signal.cancelled:  # nothing is asked for: the fence records it
            return partial(self.driver.list_sessions, cursor)
        try:
            return self.driver.begin_list_sessions(cursor)
        except Exception as exc:  # noqa: BLE001 -- raised by the returned call instead
            return partial(_raise, exc)

    def _take(self, summary: SessionSummary) -> Iterator[StreamItem]:
        """Read, retain or reject one listing. The first listing of an id decides."""
        session_id = summary.native_session_id
        if not self._listed.add_distinct(session_id):
            yield self._error(
                "list",
                session_id,
                "duplicate-session",
                f"source {self.source_id} listed session {session_id} again; "
                f"the first listing was kept",
            )
            return
        self.outcome.listed += 1
        item = self.reads.take(summary)
        if item.kind == "retained" and self._keep_retained:
            self.retained.append(summary)
        # once the consumer drops the item, nothing here keeps the snapshot
        yield item

    def _error(self, stage: CollectionStage, session_id: str | None, code: str, message: str) -> StreamItem:
        return StreamItem(kind="error", error=self.reads.record(stage, session_id, code, message))


def _raise(exc: Exception) -> NoReturn:
    raise exc


def error_code_and_message(exc: Exception, fallback_code: str) -> tuple[str, str]:
    """A stable code and a human message; never the exception class name."""
    if isinstance(exc, DriverError):
        return exc.code or fallback_code, exc.message or fallback_code
    return fallback_code, str(exc) or fallback_code


def stream_source(
    driver: AgentDriver,
    signal: SignalSource = None,
    retain: RetainPredicate | None = None,
    *,
    listing_limit: int = LISTING_LIMIT,
    keep_retained: bool = True,
) -> SourceStream:
    """Collect one source lazily; see `SourceStream`. With `keep_retained=False` the
    stream's `retained` stays empty (each retained summary is only in its item)."""
    return SourceStream(driver, signal, retain, listing_limit=listing_limit, keep_retained=keep_retained)


def collect_source(
    driver: AgentDriver,
    signal: SignalSource = None,
    retain: RetainPredicate | None = None,
    *,
    listing_limit: int = LISTING_LIMIT,
) -> CollectedSource:
    """Collect one source into memory. Errors are in the outcome, not raised."""
    stream = stream_source(driver, signal, retain, listing_limit=listing_limit)
    snapshots = [item.snapshot for item in stream if item.snapshot is not None]
    stream.outcome.listed_session_ids = list(stream.listed_ids)  # collected in memory anyway
    return CollectedSource(
        source=stream.source.model_copy(deep=True),
        outcome=stream.outcome,
        snapshots=snapshots,
        retained=stream.retained,
    )

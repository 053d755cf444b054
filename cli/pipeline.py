"""Record-level stages: list, read and prepare as transformers over the record stream.

Each stage takes one record at a time and yields the records it produces, passing
through unchanged every record it does not consume. Later stages wrap earlier ones,
so `prepare` reads the sessions that `summary` records name and `publish` prepares
`snapshot` records itself. `agentctl sync` chains the same stages in one process,
which is why the composed pipe and `sync` publish the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from cli.records import InputRecord, error_record
from lib.drivers.base import AgentDriver, DriverError
from lib.git_context import GitContextResolver
from lib.memory_release import release_after_large_session
from lib.prepare import PreparedSession, prepare_session
from lib.reconcile import (
    CollectionError,
    error_code_and_message,
    merge_inventory_lifecycle,
    stream_source,
)
from lib.types import NativeSessionSnapshot, SessionSummary, normalize_source_id

# What flows between stages: a record dict, a line passed through as read, or a
# prepared session (written piece by piece, never as one giant string).
Item = dict[str, Any] | InputRecord | PreparedSession
RetainPredicate = Callable[[str, SessionSummary], bool]


def kind_of(item: Item) -> str:
    if isinstance(item, InputRecord):
        return item.kind
    if isinstance(item, PreparedSession):
        return "prepared"
    return item["record"]


def data_of(item: Item) -> dict[str, Any]:
    if isinstance(item, InputRecord):
        return item.data
    if isinstance(item, PreparedSession):
        raise TypeError("a prepared session has no record dict")
    return item


def source_record(driver: AgentDriver, observation_sequence: int | None) -> dict[str, Any]:
    return {
        "record": "source",
        "source": driver.source.to_wire(),
        "observationSequence": observation_sequence,
    }


def summary_record(record_kind: str, source_id: str, summary: SessionSummary) -> dict[str, Any]:
    return {"record": record_kind, "sourceId": source_id, "summary": summary.to_wire()}


def snapshot_record(source_id: str, driver_kind: str, snapshot: NativeSessionSnapshot) -> dict[str, Any]:
    # Events go in by reference: serialising a 50 MB snapshot through pydantic's JSON
    # mode would walk (and copy) every event for nothing.
    data = snapshot.model_dump(by_alias=True, mode="json", exclude={"events"})
    data["events"] = snapshot.events
    return {"record": "snapshot", "sourceId": source_id, "driver": driver_kind, "snapshot": data}


def collection_error_record(stage: str, error: CollectionError) -> dict[str, Any]:
    return error_record(
        stage, error.code, error.message, source_id=error.source_id, native_session_id=error.native_session_id
    )


def list_source(driver: AgentDriver, observation_sequence: int | None = None) -> Iterator[dict[str, Any]]:
    """`agentctl list`: the source record, every summary, then the inventory outcome."""
    yield source_record(driver, observation_sequence)
    # The inventory rules (repeated cursors, repeats, the listing limit) live in the
    # collection stream; retaining every summary walks the inventory without reading.
    stream = stream_source(driver, retain=lambda _summary: True)
    for item in stream:
        if item.kind == "retained" and item.summary is not None:
            yield summary_record("summary", driver.source.id, item.summary)
        elif item.error is not None:
            yield collection_error_record("list", item.error)
    outcome = stream.outcome.to_wire()
    outcome.update(retained=0, complete=False)
    yield {"record": "outcome", "stage": "list", **outcome}


class DriverPool:
    """Started drivers by source id, shared by the stages of one process.

    A source whose driver cannot be created or started is remembered as its error, so
    every session of that source reports the same reason without retrying the start.
    """

    def __init__(self, factory: Callable[[str], AgentDriver]) -> None:
        self._factory = factory
        self._drivers: dict[str, AgentDriver | DriverError] = {}

    def get(self, source_id: str) -> AgentDriver | DriverError:
        if source_id not in self._drivers:
            try:
                driver = self._factory(source_id)
                driver.start()
                self._drivers[source_id] = driver
            except DriverError as exc:
                self._drivers[source_id] = exc
        return self._drivers[source_id]

    def close(self) -> None:
        for driver in self._drivers.values():
            if isinstance(driver, AgentDriver):
                driver.stop()
        self._drivers.clear()


@dataclass
class SourceReadState:
    """What the read stage learned about one source while reading its sessions."""

    read: int = 0
    retained: int = 0
    incomplete_snapshots: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    merged: bool = False


class ReadStage:
    """Reads the sessions that `summary` records (or explicit ids) name."""

    stage = "read"

    def __init__(
        self,
        drivers: DriverPool,
        *,
        retain: RetainPredicate | None = None,
        git: GitContextResolver | None = None,
    ) -> None:
        self._drivers = drivers
        self._retain = retain
        self._git = (git or GitContextResolver()).begin_observation()
        self._sources: dict[str, SourceReadState] = {}

    def handle(self, item: Item) -> Iterator[Item]:
        kind = kind_of(item)
        if kind == "summary":
            yield from self._handle_summary(data_of(item))
        elif kind == "outcome" and data_of(item).get("stage") == "list":
            yield self._merged_outcome(data_of(item))
        else:
            yield item

    def finish(self) -> Iterator[Item]:
        """Outcomes for sources whose reads had no inventory outcome (explicit ids)."""
        for source_id, state in self._sources.items():
            if not state.merged:
                yield self._outcome(source_id, state, inventory=None)

    def close(self) -> None:
        self._drivers.close()

    def read_ids(self, source_id: str, session_ids: list[str]) -> Iterator[Item]:
        for session_id in session_ids:
            yield from self._read(normalize_source_id(source_id), SessionSummary(native_session_id=session_id))

    # -- internals --------------------------------------------------------------------

    def _handle_summary(self, data: dict[str, Any]) -> Iterator[Item]:
        source_id = data.get("sourceId")
        try:
            summary = SessionSummary.model_validate(data.get("summary"))
        except ValidationError as exc:
            yield error_record(self.stage, "bad-input", f"summary record: {_first_error(exc)}", source_id=source_id)
            return
        if not isinstance(source_id, str) or not source_id.strip():
            yield error_record(self.stage, "bad-input", "summary record has no sourceId",
                               native_session_id=summary.native_session_id)
            return
        yield from self._read(normalize_source_id(source_id), summary)

    def _read(self, source_id: str, summary: SessionSummary) -> Iterator[Item]:
        state = self._sources.setdefault(source_id, SourceReadState())
        session_id = summary.native_session_id
        if self._retain is not None and self._retain(source_id, summary):
            state.retained += 1
            yield summary_record("retained", source_id, self._git.enrich(summary))
            return
        driver = self._drivers.get(source_id)
        if isinstance(driver, DriverError):
            yield self._error(state, source_id, session_id, driver.code, driver.message)
            return
        release_after_large_session()  # a large session before this one is all freed now
        try:
            snapshot = driver.read_session(session_id)
        except Exception as exc:  # noqa: BLE001 - recorded with a stable code, as collection does
            yield self._error(state, source_id, session_id, *error_code_and_message(exc, "read-failed"))
            return
        snapshot = merge_inventory_lifecycle(snapshot, summary)
        snapshot = snapshot.model_copy(update={"summary": self._git.enrich(snapshot.summary)})
        state.read += 1
        if not snapshot.complete:
            state.incomplete_snapshots += 1
        yield snapshot_record(source_id, driver.source.driver, snapshot)

    def _error(self, state: SourceReadState, source_id: str, session_id: str, code: str, message: str) -> dict:
        record = error_record(self.stage, code, message, source_id=source_id, native_session_id=session_id)
        state.errors.append({k: record[k] for k in ("stage", "sourceId", "nativeSessionId", "code", "message")})
        return record

    def _merged_outcome(self, inventory: dict[str, Any]) -> dict[str, Any]:
        source_id = normalize_source_id(str(inventory.get("sourceId", "")))
        state = self._sources.setdefault(source_id, SourceReadState())
        state.merged = True
        return self._outcome(source_id, state, inventory)

    def _outcome(self, source_id: str, state: SourceReadState, inventory: dict[str, Any] | None) -> dict:
        inventory = inventory or {}
        inventory_complete = bool(inventory.get("inventoryComplete", False))
        errors = list(inventory.get("errors", [])) + state.errors
        return {
            "record": "outcome",
            "stage": "read",
            "sourceId": source_id,
            "complete": inventory_complete and not state.errors and state.incomplete_snapshots == 0,
            "inventoryComplete": inventory_complete,
            "pages": inventory.get("pages", 0),
            "listings": inventory.get("listings", 0),
            "listed": inventory.get("listed", 0),
            "read": state.read,
            "retained": state.retained,
            "incompleteSnapshots": state.incomplete_snapshots,
            "errors": errors,
            "listedSessionIds": inventory.get("listedSessionIds", []),
        }


class PrepareStage:
    """Turns `snapshot` records into `prepared` ones; reads `summary` records first."""

    stage = "prepare"

    def __init__(self, read_stage: ReadStage) -> None:
        self._read_stage = read_stage

    def handle(self, item: Item) -> Iterator[Item]:
        for out in self._read_stage.handle(item):
            yield from self._prepare(out)

    def finish(self) -> Iterator[Item]:
        for out in self._read_stage.finish():
            yield from self._prepare(out)

    def close(self) -> None:
        self._read_stage.close()

    def _prepare(self, item: Item) -> Iterator[Item]:
        if kind_of(item) != "snapshot":
            yield item
            return
        data = data_of(item)
        source_id = data.get("sourceId")
        raw = data.get("snapshot")
        events = raw.get("events") if isinstance(raw, dict) else None
        try:
            if type(events) is list:
                # Validated without its events (list[Any] takes any list), which stay in
                # their own list: preparing consumes that very list, so each parsed
                # event is freed once prepared, not kept alive by a validated copy.
                snapshot = NativeSessionSnapshot.model_validate({k: v for k, v in raw.items() if k != "events"})
                snapshot.events = events
            else:
                snapshot = NativeSessionSnapshot.model_validate(raw)
        except ValidationError as exc:
            yield error_record(self.stage, "bad-input", f"snapshot record: {_first_error(exc)}", source_id=source_id)
            return
        if not isinstance(source_id, str) or not source_id.strip():
            yield error_record(self.stage, "bad-input", "snapshot record has no sourceId",
                               native_session_id=snapshot.summary.native_session_id)
            return
        try:
            yield prepare_session(source_id, snapshot, driver=data.get("driver"), consume=True)
        except ValueError as exc:
            yield error_record(self.stage, getattr(exc, "code", "bad-input"), str(exc), source_id=source_id,
                               native_session_id=snapshot.summary.native_session_id)


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "value"
    return f"{where}: {first['msg']}"

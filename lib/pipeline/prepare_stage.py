"""The prepare stage: `snapshot` records (or sessions read in this process) become
prepared sessions: key, event chunks, content hashes."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import ValidationError

from lib.pipeline.read_stage import ReadStage, first_error
from lib.pipeline.records import Item, ReadSession, data_of, error_record, kind_of
from lib.prepare import prepare_session
from lib.types import NativeSessionSnapshot


class PrepareStage:
    """Prepares what the read stage (which it wraps) reads, and snapshot records."""

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
        if isinstance(item, ReadSession):
            yield from self._prepare_snapshot(item.source_id, item.driver, item.snapshot)
            return
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
            yield error_record(self.stage, "bad-input", f"snapshot record: {first_error(exc)}", source_id=source_id)
            return
        if not isinstance(source_id, str) or not source_id.strip():
            yield error_record(self.stage, "bad-input", "snapshot record has no sourceId",
                               native_session_id=snapshot.summary.native_session_id)
            return
        yield from self._prepare_snapshot(source_id, data.get("driver"), snapshot)

    def _prepare_snapshot(self, source_id: str, driver: str | None, snapshot: NativeSessionSnapshot) -> Iterator[Item]:
        try:
            yield prepare_session(source_id, snapshot, driver=driver, consume=True)
        except ValueError as exc:
            yield error_record(self.stage, getattr(exc, "code", "bad-input"), str(exc), source_id=source_id,
                               native_session_id=snapshot.summary.native_session_id)

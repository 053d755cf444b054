"""The JSON-lines record stream between stages: what an item is, how records are built,
read from a stream and handed to a sink.

One JSON object per line; every record has a `record` field naming its kind. A stage
passes through, unchanged, every record it does not consume. A line that is not a
record becomes an `error` record naming the line number, and the stream goes on.

Inside one process the stages hand each other items: a record dict, an `InputRecord`
(a line as read, passed through byte for byte), a `ReadSession` or `SummaryItem`
(their models as they are), or a `PreparedSession` (written piece by piece, never as
one giant string). A `RecordSink` receives what the last stage
produces; `JsonLinesSink` writes it as JSON lines, other sinks (a terminal summary,
a host) read the items themselves instead of parsing our own output.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import IO, Any

from lib.key_table import KeyTable
from lib.prepare import PreparedSession
from lib.reconcile import CollectionError
from lib.types import NativeSessionSnapshot, SessionSummary, SourceDescriptor

RECORD_KINDS = frozenset(
    {"source", "summary", "retained", "snapshot", "prepared", "error", "outcome", "published",
     "publication", "session", "receipt"}
)

# Lines longer than this are not kept beside their parsed form: a 50 MB snapshot line
# would otherwise stay in memory while the session is prepared.
PASSTHROUGH_TEXT_LIMIT = 64 * 1024


@dataclass
class InputRecord:
    """A parsed input line. `text` is the line as read (short lines only), so
    pass-through is byte-exact; a long line passes through re-serialised."""

    kind: str
    data: dict[str, Any]
    text: str | None
    line: int


@dataclass
class ReadSession:
    """A session read in this process: the snapshot itself, handed to the next stage as
    it is; it becomes a `snapshot` record only when it leaves the process."""

    source_id: str
    driver: str
    snapshot: NativeSessionSnapshot

    def record(self) -> dict[str, Any]:
        return snapshot_record(self.source_id, self.driver, self.snapshot)


@dataclass
class SummaryItem:
    """A `summary` (listed) or `retained` (not read) session made in this process: its
    validated model handed to the next stage as it is, not dumped and validated again
    per stage; a record only when it leaves the process."""

    kind: str  # "summary" or "retained"
    source_id: str
    summary: SessionSummary

    def record(self) -> dict[str, Any]:
        return summary_record(self.kind, self.source_id, self.summary)


Item = dict[str, Any] | InputRecord | ReadSession | PreparedSession | SummaryItem


def kind_of(item: Item) -> str:
    if isinstance(item, InputRecord):
        return item.kind
    if isinstance(item, ReadSession):
        return "snapshot"
    if isinstance(item, PreparedSession):
        return "prepared"
    if isinstance(item, SummaryItem):
        return item.kind
    return item["record"]


def data_of(item: Item) -> dict[str, Any]:
    """The record dict of an item (a read session's is built on demand)."""
    if isinstance(item, InputRecord):
        return item.data
    if isinstance(item, ReadSession | SummaryItem):
        return item.record()
    if isinstance(item, PreparedSession):
        raise TypeError("a prepared session has no record dict")
    return item


# -- building records --------------------------------------------------------------------


def error_record(
    stage: str,
    code: str,
    message: str,
    *,
    source_id: str | None = None,
    native_session_id: str | None = None,
    line: int | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "record": "error",
        "stage": stage,
        "sourceId": source_id,
        "nativeSessionId": native_session_id,
        "code": code,
        "message": message,
    }
    if line is not None:
        record["line"] = line
    return record


def collection_error_record(stage: str, error: CollectionError) -> dict[str, Any]:
    return error_record(
        stage, error.code, error.message, source_id=error.source_id, native_session_id=error.native_session_id
    )


def source_record(
    source: SourceDescriptor, observation_sequence: int | None, observation_origin: str | None
) -> dict[str, Any]:
    """`observationOrigin` names the store and space the sequence was allocated in."""
    return {
        "record": "source",
        "source": source.to_wire(),
        "observationSequence": observation_sequence,
        "observationOrigin": observation_origin,
    }


def summary_record(record_kind: str, source_id: str, summary: SessionSummary) -> dict[str, Any]:
    return {"record": record_kind, "sourceId": source_id, "summary": summary.to_wire()}


def snapshot_record(source_id: str, driver_kind: str, snapshot: NativeSessionSnapshot) -> dict[str, Any]:
    # Events go in by reference: serialising a 50 MB snapshot through pydantic's JSON
    # mode would walk (and copy) every event for nothing.
    data = snapshot.model_dump(by_alias=True, mode="json", exclude={"events"})
    data["events"] = snapshot.events
    return {"record": "snapshot", "sourceId": source_id, "driver": driver_kind, "snapshot": data}


# -- reading and writing -----------------------------------------------------------------


def json_default(value: Any) -> Any:
    """Fabric values plain JSON cannot hold: a link as its JSON form, the rest as fvj1 tags."""
    from lib.fabric.values import Link, encode

    if isinstance(value, Link):
        return value.to_json()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, KeyTable):  # an outcome's listed ids, as a list (json_pieces streams them)
        return list(value)
    return encode(value)


def to_json_line(record: Any) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=json_default) + "\n"


_IDS_AT_ONCE = 1024  # a table's strings encoded at a time (json_pieces)


def json_pieces(record: Any) -> Iterator[str]:
    """`to_json_line(record)` in pieces, the same text: a record whose fields hold a
    `KeyTable` (an outcome's `listedSessionIds` from the list stage) has that list
    written a bounded run of strings at a time, never as one list and one text (25,000
    ids were 3.7 MB at once, at a listing idle sync's peak: issue 14 goal 4)."""
    if type(record) is not dict or not any(type(value) is KeyTable for value in record.values()):
        yield to_json_line(record)
        return
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=json_default).encode
    yield "{"
    for at, (name, value) in enumerate(record.items()):
        yield ("," if at else "") + encode(name) + ":"
        if type(value) is not KeyTable:
            yield encode(value)
            continue
        yield "["
        strings = iter(value)
        first = True
        while run := list(islice(strings, _IDS_AT_ONCE)):
            yield ("" if first else ",") + encode(run)[1:-1]
            first = False
        yield "]"
    yield "}\n"


class RecordSink:
    """Receives the items a stage produces and counts them by kind; `emit` does the
    rest (nothing, here)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    @property
    def errors(self) -> int:
        return self.counts.get("error", 0)

    def put(self, item: Item) -> None:
        kind = kind_of(item)
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.emit(item)

    def emit(self, item: Item) -> None:
        pass


class JsonLinesSink(RecordSink):
    """Writes records one per line, flushed so pipelines stream."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__()
        self.stream = stream if stream is not None else sys.stdout

    def emit(self, item: Item) -> None:
        if isinstance(item, PreparedSession):
            for piece in item.iter_json_pieces():
                self.stream.write(piece)
            self.stream.write("\n")
        elif isinstance(item, InputRecord) and item.text is not None:
            self.stream.write(item.text)
        else:
            for piece in json_pieces(data_of(item)):
                self.stream.write(piece)
        self.stream.flush()


# The fields each record kind carries that stages read directly (the rest is validated
# by the model that reads it: SessionSummary, NativeSessionSnapshot, PreparedSession...).
# None allowed where the type tuple includes type(None).
_NULL = type(None)
_ENVELOPES: dict[str, dict[str, tuple[type, ...]]] = {
    "source": {"source": (dict,), "observationSequence": (int, _NULL), "observationOrigin": (str, _NULL)},
    "summary": {"sourceId": (str,), "summary": (dict,)},
    "retained": {"sourceId": (str,), "summary": (dict,)},
    "snapshot": {"sourceId": (str,), "driver": (str, _NULL), "snapshot": (dict,)},
    "prepared": {"sourceId": (str,), "key": (str,)},
    "error": {"stage": (str, _NULL), "sourceId": (str, _NULL), "nativeSessionId": (str, _NULL),
              "code": (str,), "message": (str,)},
    "outcome": {"stage": (str,), "sourceId": (str,)},
}


def envelope_problem(kind: str, data: dict[str, Any]) -> str | None:
    """What is wrong with the fields of a record that stages read directly, or None."""
    for name, types in _ENVELOPES.get(kind, {}).items():
        value = data.get(name)
        if type(value) is bool or not isinstance(value, types):  # a bool is no int here
            wanted = " or ".join("null" if t is _NULL else {str: "a string", int: "an integer",
                                                           dict: "an object"}[t] for t in types)
            return f"{kind} record: {name} must be {wanted}"
        if isinstance(value, str) and name in ("sourceId", "key") and not value.strip():
            return f"{kind} record: {name} must not be blank"
    for name, (check, wanted) in _OPTIONAL_FIELDS.get(kind, {}).items():
        if name in data and data[name] is not None and not check(data[name]):
            return f"{kind} record: {name} must be {wanted}"
    return None


def _list_of(item_type: type) -> Any:
    return lambda value: isinstance(value, list) and all(isinstance(v, item_type) for v in value)


# Optional fields stages read directly that must have their shape when present (the
# publication reads an outcome's errors and listed ids as they are).
_OPTIONAL_FIELDS: dict[str, dict[str, tuple[Any, str]]] = {
    "outcome": {
        "errors": (_list_of(dict), "a list of error objects"),
        "listedSessionIds": (_list_of(str), "a list of strings"),
        "inventoryComplete": (lambda v: type(v) is bool, "true or false"),
        "complete": (lambda v: type(v) is bool, "true or false"),
    },
}


def read_records(stream: IO[str], stage: str, sink: RecordSink) -> Iterator[InputRecord]:
    """Yield each well-formed record; put an `error` record in `sink` for every bad line."""
    for number, text in enumerate(stream, start=1):
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except ValueError as exc:
            sink.put(error_record(stage, "bad-input", f"line {number}: not JSON ({exc.msg})", line=number))
            continue
        kind = data.get("record") if isinstance(data, dict) else None
        if not isinstance(kind, str) or kind not in RECORD_KINDS:
            what = "no 'record' field" if isinstance(data, dict) and "record" not in data else "not a known record"
            sink.put(error_record(stage, "bad-input", f"line {number}: {what}", line=number))
            continue
        problem = envelope_problem(kind, data)
        if problem is not None:
            sink.put(error_record(stage, "bad-input", f"line {number}: {problem}", line=number))
            continue
        kept = None if len(text) > PASSTHROUGH_TEXT_LIMIT else text if text.endswith("\n") else text + "\n"
        del text
        yield InputRecord(kind=kind, data=data, text=kept, line=number)


def stage_inputs(initial: Iterable[Item], stdin: IO[str] | None, stage: str, sink: RecordSink) -> Iterator[Item]:
    """`initial` items, then stdin's records (bad lines go to `sink` as errors)."""
    yield from initial
    if stdin is not None:
        yield from read_records(stdin, stage, sink)

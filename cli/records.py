"""The JSON-lines record stream between subcommands.

One JSON object per line; every record has a `record` field naming its kind. A stage
passes through, unchanged, every record it does not consume. A line that is not a
record becomes an `error` record naming the line number, and the stream goes on.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

RECORD_KINDS = frozenset(
    {"source", "summary", "retained", "snapshot", "prepared", "error", "outcome", "published", "receipt"}
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


def read_records(stream: IO[str], stage: str, writer: RecordWriter) -> Iterator[InputRecord]:
    """Yield each well-formed record; write an `error` record for every bad line."""
    for number, text in enumerate(stream, start=1):
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except ValueError as exc:
            writer.write(error_record(stage, "bad-input", f"line {number}: not JSON ({exc.msg})", line=number))
            continue
        kind = data.get("record") if isinstance(data, dict) else None
        if kind not in RECORD_KINDS:
            what = "no 'record' field" if isinstance(data, dict) and "record" not in data else "not a known record"
            writer.write(error_record(stage, "bad-input", f"line {number}: {what}", line=number))
            continue
        kept = None if len(text) > PASSTHROUGH_TEXT_LIMIT else text if text.endswith("\n") else text + "\n"
        del text
        yield InputRecord(kind=kind, data=data, text=kept, line=number)


def _json_default(value: Any) -> Any:
    """Fabric values plain JSON cannot hold: a link as its JSON form, the rest as fvj1 tags."""
    from lib.fabric.values import Link, encode

    if isinstance(value, Link):
        return value.to_json()
    if isinstance(value, tuple):
        return list(value)
    return encode(value)


def to_json_line(record: Any) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_json_default) + "\n"


class RecordWriter:
    """Writes records to stdout, one per line, flushed so pipelines stream."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.errors = 0
        self.counts: dict[str, int] = {}

    def _count(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind == "error":
            self.errors += 1

    def write(self, record: dict[str, Any]) -> None:
        self._count(record["record"])
        self.stream.write(to_json_line(record))
        self.stream.flush()

    def write_pieces(self, kind: str, pieces: Iterable[str]) -> None:
        """Write one record given as JSON text pieces, without joining a giant string."""
        self._count(kind)
        for piece in pieces:
            self.stream.write(piece)
        self.stream.write("\n")
        self.stream.flush()

    def passthrough(self, record: InputRecord) -> None:
        if record.text is None:
            self.write(record.data)
            return
        self._count(record.kind)
        self.stream.write(record.text)
        self.stream.flush()

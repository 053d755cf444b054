"""Shared plumbing for stages that read records from stdin and write them to stdout."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import IO, Protocol

import click

from cli.context import AppContext
from cli.errors import EXIT_OK, EXIT_PARTIAL
from cli.pipeline import Item
from cli.records import InputRecord, RecordWriter, read_records
from lib.prepare import PreparedSession


class Stage(Protocol):
    stage: str

    def handle(self, item: Item) -> Iterator[Item]: ...

    def finish(self) -> Iterator[Item]: ...

    def close(self) -> None: ...


def write_item(writer: RecordWriter, item: Item) -> None:
    if isinstance(item, InputRecord):
        writer.passthrough(item)
    elif isinstance(item, PreparedSession):
        writer.write_pieces("prepared", item.iter_json_pieces())
    else:
        writer.write(item)


def run_stage(
    app: AppContext,
    stage: Stage,
    *,
    initial: Iterable[Item] = (),
    stdin: IO[str] | None = None,
    writer: RecordWriter | None = None,
    description: str | None = None,
) -> RecordWriter:
    """Feed `initial` items, then stdin's records, through `stage` to stdout."""
    writer = writer or RecordWriter()
    try:
        for item in app.progress(_inputs(initial, stdin, stage.stage, writer), description or stage.stage):
            for out in stage.handle(item):
                write_item(writer, out)
        for out in stage.finish():
            write_item(writer, out)
    finally:
        stage.close()
    return writer


def _inputs(initial: Iterable[Item], stdin: IO[str] | None, stage: str, writer: RecordWriter) -> Iterator[Item]:
    yield from initial
    if stdin is not None:
        yield from read_records(stdin, stage, writer)


def stdin_if_piped() -> IO[str] | None:
    """stdin when something is piped in; never block waiting on a terminal."""
    if sys.stdin is None or sys.stdin.closed:
        return None
    return None if sys.stdin.isatty() else sys.stdin


def exit_for(writer: RecordWriter) -> None:
    """Exit 3 (partial) when any error record went out, else 0."""
    ctx = click.get_current_context()
    ctx.exit(EXIT_PARTIAL if writer.errors else EXIT_OK)


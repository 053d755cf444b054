"""`agentctl sync`: the whole collection, every source, in one process (cron's job)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import click

from cli.commands.publish import make_publish_stage
from cli.commands.streaming import exit_for, run_stage
from cli.context import AppContext
from cli.errors import EXIT_USAGE, CliError
from cli.pipeline import DriverPool, Item, list_source
from cli.records import RecordWriter, error_record
from lib.drivers.base import DriverError


@click.command("sync")
@click.argument("sources", nargs=-1)
@click.option("--lock-timeout", type=float, default=600.0, show_default=True,
              help="Seconds to wait for another publication to finish (exit 4 after).")
@click.option("--full", is_flag=True, help="Read every session, even those whose published copy is current.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines even on a terminal.")
@click.pass_obj
def sync_command(
    app: AppContext, sources: tuple[str, ...], lock_timeout: float, full: bool, as_json: bool
) -> None:
    """Collect SOURCES (default: every enabled source) and publish them.

    Streams: one session is read, prepared and published before the next is read,
    so memory stays bounded by the largest session. A session whose inventory update
    time equals that of its complete published copy is kept without reading it
    (--full reads everything). A source that cannot start is reported and its
    published sessions are kept.

    \b
    Example:
        agentctl sync                 # every enabled source
        agentctl sync codex --full    # re-read every Codex session
        */15 * * * * agentctl -q sync  # from cron
    """
    source_ids = [app.source_config(s).id for s in sources] if sources else app.default_sync_sources()
    if not source_ids:
        raise CliError(app.no_sources_message(), EXIT_USAGE)
    app.lock_timeout = lock_timeout
    as_records = as_json or not sys.stdout.isatty()
    writer = RecordWriter() if as_records else RecordWriter(stream=_Summary(app))
    with app.locked_publication():
        run_sync(app, source_ids, writer, drivers=DriverPool(app.create_driver), full=full)
    exit_for(writer)


def run_sync(
    app: AppContext, source_ids: list[str], writer: RecordWriter, *, drivers: DriverPool, full: bool = False
) -> None:
    """The whole collection of `source_ids`, published: the composed pipe's stages in one
    process (list, read, prepare, publish), one session at a time."""
    stage = make_publish_stage(app, full=full, drivers=drivers)
    run_stage(app, stage, initial=_collect(app, drivers, source_ids), writer=writer, description="sync")


def _collect(app: AppContext, drivers: DriverPool, source_ids: list[str]) -> Iterator[Item]:
    """Every source's inventory records, in order; a source that cannot start is one
    error record (stage `start`)."""
    target = app.open_target()
    for source_id in source_ids:
        driver = drivers.get(source_id)
        if isinstance(driver, DriverError):
            # The publication keeps this source's sessions (its inventory is incomplete).
            yield error_record("start", driver.code, f"source {source_id} cannot start: {driver.message}",
                               source_id=source_id)
            continue
        # The observation sequence is allocated before the first provider call.
        yield from list_source(driver, target.begin_session_observation())


class _Summary:
    """On a terminal: a line per source and a total, instead of records."""

    def __init__(self, app: AppContext) -> None:
        self.app = app
        self.buffer = ""

    def write(self, text: str) -> None:
        import json

        self.buffer += text
        while "\n" in self.buffer:
            line, self.buffer = self.buffer.split("\n", 1)
            if line.strip():
                self._show(json.loads(line))

    def flush(self) -> None:
        pass

    def _show(self, record: dict) -> None:
        kind = record["record"]
        if kind == "error":
            print(f"error: {record.get('sourceId') or '-'} {record.get('nativeSessionId') or ''}: "
                  f"{record['message']}", file=sys.stderr)
        elif kind == "publication":
            for source in record["sources"]:
                state = "complete" if source.get("inventoryComplete") else "incomplete"
                print(f"{source['sourceId']}: {source.get('listed', 0)} listed, {source.get('read', 0)} read, "
                      f"{source.get('retained', 0)} kept unchanged, {source.get('errorCount', 0)} errors "
                      f"(inventory {state})")
            statuses = ", ".join(f"{n} {s}" for s, n in record["statuses"].items()) or "none"
            print(f"published generation {record['generation']}: {record['sessionCount']} sessions "
                  f"({record['written']} written, {record['unchanged']} unchanged; {statuses})")

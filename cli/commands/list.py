"""`agentctl list SOURCE`: one source's inventory as records."""

from __future__ import annotations

import sys

import click

from cli.context import AppContext
from cli.errors import exit_for
from cli.table import print_table
from lib.drivers.base import DriverError
from lib.pipeline.listing import list_source
from lib.pipeline.records import Item, JsonLinesSink, RecordSink, data_of, kind_of


@click.command("list")
@click.argument("source")
@click.option("--json", "as_json", is_flag=True, help="JSON lines even on a terminal.")
@click.pass_obj
def list_command(app: AppContext, source: str, as_json: bool) -> None:
    """List the sessions of SOURCE.

    Writes a `source` record, one `summary` record per session and an `outcome`
    record (JSON lines when piped or with --json; a table on a terminal).

    \b
    Example:
        agentctl list codex | agentctl read | agentctl prepare
        agentctl list codex --json | jq -r .summary.title
    """
    driver = app.workspace.collection_driver(source)
    # The observation sequence is allocated before the first provider call, so a
    # publication of this listing can be ordered against refreshes that start later.
    target = app.workspace.open_target()
    sequence, origin = target.begin_session_observation(), target.observation_origin()
    try:
        driver.start()
    except DriverError as exc:
        raise exc.reworded(f"source {driver.source.id} cannot start: {exc.message}") from None
    table = as_json is False and sys.stdout.isatty()
    sink = SessionTable(app) if table else JsonLinesSink()
    try:
        for record in list_source(driver, sequence, origin):
            sink.put(record)
    finally:
        driver.stop()
    if isinstance(sink, SessionTable):
        sink.print()
    exit_for(sink)


class SessionTable(RecordSink):
    """On a terminal: a table of the listed sessions; errors as messages on stderr."""

    def __init__(self, app: AppContext) -> None:
        super().__init__()
        self._app = app
        self.rows: list[tuple[str, str, str, str]] = []

    def emit(self, item: Item) -> None:
        record = data_of(item)
        if kind_of(item) == "summary":
            summary = record["summary"]
            self.rows.append((summary["nativeSessionId"], summary.get("updatedAt") or "",
                              "archived" if summary.get("archived") else "", summary.get("title") or ""))
        elif kind_of(item) == "error":
            self._app.say(f"agentctl: {record['message']}")

    def print(self) -> None:
        print_table(("SESSION", "UPDATED", "STATE", "TITLE"), self.rows)

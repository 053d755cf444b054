"""`agentctl list SOURCE`: one source's inventory as records."""

from __future__ import annotations

import sys

import click

from cli.commands.streaming import exit_for, write_item
from cli.context import AppContext
from cli.errors import EXIT_FAILURE, CliError
from cli.pipeline import list_source
from cli.records import RecordWriter
from cli.table import print_table
from lib.drivers.base import DriverError


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
    driver = app.create_driver(source)
    # The observation sequence is allocated before the first provider call, so a
    # publication of this listing can be ordered against refreshes that start later.
    sequence = app.open_target().begin_session_observation()
    try:
        driver.start()
    except DriverError as exc:
        raise CliError(f"source {driver.source.id} cannot start: {exc.message}", EXIT_FAILURE) from None
    try:
        records = list_source(driver, sequence)
        if as_json or not sys.stdout.isatty():
            writer = RecordWriter()
            for record in records:
                write_item(writer, record)
        else:
            writer = RecordWriter(stream=_Discard())
            rows = []
            for record in records:
                writer.write(record)
                if record["record"] == "summary":
                    summary = record["summary"]
                    rows.append((summary["nativeSessionId"], summary.get("updatedAt") or "",
                                 "archived" if summary.get("archived") else "", summary.get("title") or ""))
                elif record["record"] == "error":
                    app.say(f"agentctl: {record['message']}")
            print_table(("SESSION", "UPDATED", "STATE", "TITLE"), rows)
    finally:
        driver.stop()
    exit_for(writer)


class _Discard:
    def write(self, _text: str) -> None:
        pass

    def flush(self) -> None:
        pass

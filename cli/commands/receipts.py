"""`agentctl receipts`: the receipt index (the latest 200 commands), as a table or JSON lines."""

from __future__ import annotations

import sys

import click

from cli.context import AppContext
from cli.table import print_table
from lib.pipeline.records import JsonLinesSink
from lib.receipts import RECEIPT_STATUSES


@click.command("receipts")
@click.option("--status", "statuses", multiple=True, type=click.Choice(RECEIPT_STATUSES),
              help="Only receipts with this status (repeatable).")
@click.option("-s", "--source", "sources", multiple=True, help="Only this source (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="JSON lines even on a terminal.")
@click.pass_obj
def receipts_command(app: AppContext, statuses, sources, as_json) -> None:  # noqa: ANN001
    """Show the latest command receipts in the space, newest first.

    A table on a terminal; one `receipt-row` record per command when piped or with
    --json (`agentctl command status ID` prints a whole receipt).

    \b
    Example:
        agentctl receipts --status failed --status unknown
    """
    workspace = app.workspace
    rows = workspace.open_target(read_only=True).receipt_rows() if workspace.store_exists() else []
    rows = [row for row in reversed(rows)
            if (not statuses or row["status"] in statuses) and (not sources or row["sourceId"] in sources)]
    if as_json or not sys.stdout.isatty():
        sink = JsonLinesSink()
        for row in rows:
            sink.put({"record": "receipt-row", **row})
        return
    print_table(
        ("UPDATED", "STATUS", "COMMAND", "SESSION", "ERROR"),
        [(row["updatedAt"][:19], row["status"],
          row["commandId"] + (f" ({row['producer']})" if row.get("producer") else ""),
          f"{row['sourceId']}/{row['nativeSessionId']}",
          (row.get("error") or {}).get("message", "")) for row in rows],
    )

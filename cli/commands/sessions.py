"""`agentctl sessions`: the published index, as a table or JSON lines."""

from __future__ import annotations

import sys

import click

from cli.context import AppContext
from cli.table import print_table
from lib.fabric.session_index import row_order
from lib.pipeline.records import JsonLinesSink
from lib.types import normalize_source_id

STATUSES = ("complete", "partial", "stale", "deleted")


@click.command("sessions")
@click.option("-s", "--source", "sources", multiple=True, help="Only this source (repeatable).")
@click.option("--status", "statuses", multiple=True, type=click.Choice(STATUSES),
              help="Only sessions with this synchronisation status (repeatable). Default: all but deleted.")
@click.option("--repo", help="Only sessions whose Git repository URL contains this text.")
@click.option("--recent", is_flag=True, help="Read the recent index (sessions updated in the last 7 days).")
@click.option("--json", "as_json", is_flag=True, help="JSON lines even on a terminal.")
@click.pass_obj
def sessions_command(app: AppContext, sources, statuses, repo, recent, as_json) -> None:  # noqa: ANN001
    """Show the sessions published in the space, newest first.

    A table on a terminal; one JSON object per session (`session` records) when
    piped or with --json.

    \b
    Example:
        agentctl sessions
        agentctl sessions --source codex --status partial --json | jq .key
        agentctl sessions --repo github.com/acme/billing
    """
    workspace = app.workspace
    index = workspace.session_reader().index("recent" if recent else "all") if workspace.store_exists() else None
    rows = index.sessions if index else []
    wanted_sources = {normalize_source_id(s) for s in sources}
    wanted_statuses = set(statuses) or {"complete", "partial", "stale"}
    rows = [
        row for row in rows
        if (not wanted_sources or row["sourceId"] in wanted_sources)
        and row.get("status") in wanted_statuses
        and (not repo or repo in (row.get("gitRepo") or ""))
    ]
    rows.sort(key=row_order)
    if as_json or not sys.stdout.isatty():
        sink = JsonLinesSink()
        for row in rows:
            sink.put({"record": "session", **row})
        return
    print_table(
        ("KEY", "UPDATED", "STATUS", "BRANCH", "TITLE"),
        [(row["key"], (row.get("updatedAt") or "")[:16], row.get("status"), row.get("gitBranch") or "",
          row.get("title") or "") for row in rows],
    )

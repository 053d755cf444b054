"""`agentctl sync`: the whole collection, every source, in one process (cron's job)."""

from __future__ import annotations

import sys

import click

from cli.context import AppContext
from cli.errors import exit_for
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.records import Item, JsonLinesSink, RecordSink, data_of, kind_of
from lib.pipeline.sync import run_sync


@click.command("sync")
@click.argument("sources", nargs=-1)
@click.option("--lock-timeout", type=float, default=600.0, show_default=True,
              help="Seconds to wait for another publication to finish (exit 4 after).")
@click.option("--accept-deletions", is_flag=True,
              help="Mark deleted what an inventory no longer lists even when that is every session of a "
                   "source, or most of many (otherwise nothing is deleted and the source is reported).")
@click.option("--full", is_flag=True, help="List every source and read every session, even when the provider's "
                                         "home is unchanged or a session's published copy is current.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines even on a terminal.")
@click.pass_obj
def sync_command(
    app: AppContext, sources: tuple[str, ...], lock_timeout: float, accept_deletions: bool, full: bool,
    as_json: bool,
) -> None:
    """Collect SOURCES (default: every enabled source) and publish them.

    Streams: while one session is prepared and published, the next one is read
    (one ahead, no more), so memory stays bounded by the two largest sessions. A session whose listing (update
    time, title, archived, active) equals its complete published copy is kept without
    reading it, and a source whose provider home (for Codex: its rollout files, session
    index and state database) is unchanged since its last complete sync is not even
    started (--full lists and reads everything). A source that cannot start is reported and
    its published sessions are kept; an inventory that would delete every session of
    a source, or most of many, deletes nothing without --accept-deletions.

    \b
    Example:
        agentctl sync                 # every enabled source
        agentctl sync codex --full    # re-read every Codex session
        */15 * * * * agentctl -q sync  # from cron
    """
    workspace = app.workspace
    source_ids = workspace.sync_sources(sources)
    workspace.lock_timeout = lock_timeout
    sink = JsonLinesSink() if as_json or not sys.stdout.isatty() else SyncSummary()
    with DriverPool(workspace.create_driver) as drivers:
        run_sync(workspace, source_ids, sink, drivers=drivers, full=full, accept_deletions=accept_deletions,
                 progress=app.progress, close_drivers=True)
    exit_for(sink)


class SyncSummary(RecordSink):
    """On a terminal: errors on stderr, a line per source and a total on stdout."""

    def __init__(self) -> None:
        super().__init__()
        self._unchanged: set[str] = set()

    def emit(self, item: Item) -> None:
        kind = kind_of(item)
        if kind == "outcome" and data_of(item).get("inventoryUnchanged"):
            self._unchanged.add(data_of(item).get("sourceId"))
        elif kind == "error":
            record = data_of(item)
            print(f"error: {record.get('sourceId') or '-'} {record.get('nativeSessionId') or ''}: "
                  f"{record['message']}", file=sys.stderr)
        elif kind == "publication":
            self._show(data_of(item))

    def _show(self, record: dict) -> None:
        for source in record["sources"]:
            if source["sourceId"] in self._unchanged:
                print(f"{source['sourceId']}: home unchanged since the last complete sync, not listed "
                      f"({source.get('listed', 0)} sessions kept)")
                continue
            state = "complete" if source.get("inventoryComplete") else "incomplete"
            print(f"{source['sourceId']}: {source.get('listed', 0)} listed, {source.get('read', 0)} read, "
                  f"{source.get('retained', 0)} kept unchanged, {source.get('errorCount', 0)} errors "
                  f"(inventory {state})")
        statuses = ", ".join(f"{n} {s}" for s, n in record["statuses"].items()) or "none"
        if record.get("idle"):
            print(f"nothing published: every source unchanged; the store stays at generation "
                  f"{record['generation']}: {record['sessionCount']} sessions ({statuses})")
            return
        print(f"published generation {record['generation']}: {record['sessionCount']} sessions "
              f"({record['written']} written, {record['unchanged']} unchanged; {statuses})")

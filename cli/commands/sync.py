"""`agentctl sync`: the whole collection, every source, in one process (cron's job)."""

from __future__ import annotations

import sys

import click

from cli.context import AppContext
from cli.errors import exit_for
from cli.fast_sync import sync_request
from cli.sync_summary import KINDS as SUMMARY_KINDS
from cli.sync_summary import SummaryLines
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
    # Kept for the fast path only when this is the command line it answers (cli/fast_sync.py).
    request = sync_request(sys.argv[1:])
    keeper = None
    if request is not None and request[0] == list(sources):
        from lib.pipeline.idle_answer import IdleAnswerKeeper

        keeper = IdleAnswerKeeper(workspace, list(sources), source_ids)
    with DriverPool(workspace.collection_driver) as drivers:
        run_sync(workspace, source_ids, sink, drivers=drivers, full=full, accept_deletions=accept_deletions,
                 progress=app.progress, close_drivers=True, idle_answer=keeper, start_early=True)
    exit_for(sink)


class SyncSummary(RecordSink):
    """On a terminal: errors on stderr, a line per source and a total on stdout
    (cli/sync_summary.py, which the idle fast path shows its kept records with)."""

    def __init__(self) -> None:
        super().__init__()
        self._lines = SummaryLines()

    def emit(self, item: Item) -> None:
        kind = kind_of(item)
        if kind in SUMMARY_KINDS:
            self._lines.emit(kind, data_of(item))

"""`agentctl publish`: records in, Fabric state out."""

from __future__ import annotations

import click

from cli.context import AppContext, stdin_if_piped
from cli.errors import exit_for
from lib.pipeline.build import publish_stage
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.records import JsonLinesSink, stage_inputs
from lib.pipeline.runner import run_stage


@click.command("publish")
@click.option("--lock-timeout", type=float, default=600.0, show_default=True,
              help="Seconds to wait for another publication to finish (exit 4 after).")
@click.option("--accept-deletions", is_flag=True,
              help="Mark deleted what an inventory no longer lists even when that is every session of a "
                   "source, or most of many (otherwise nothing is deleted and the source is reported).")
@click.option("--full", is_flag=True, help="Read every session summary records name, even unchanged ones.")
@click.pass_obj
def publish_command(app: AppContext, lock_timeout: float, accept_deletions: bool, full: bool) -> None:
    """Publish sessions into the Fabric space (--store, --space).

    Reads `source`, `prepared`, `snapshot`, `summary`, `retained`, `error` and
    `outcome` records from stdin. Writes one `published` record per session (what
    happened to it: written, unchanged, retained, ...) and a final `publication`
    record with the counts. A complete inventory marks sessions it no longer lists
    deleted; an incomplete one keeps them.

    \b
    Example:
        agentctl list codex | agentctl prepare | agentctl publish
        agentctl list codex | agentctl read | agentctl prepare | agentctl publish
    """
    app.workspace.lock_timeout = lock_timeout
    sink = JsonLinesSink()
    with DriverPool(app.workspace.collection_driver) as drivers:
        stage = publish_stage(app.workspace, drivers, full=full, accept_deletions=accept_deletions)
        run_stage(stage, stage_inputs((), stdin_if_piped(), stage.stage, sink), sink, progress=app.progress)
    exit_for(sink)

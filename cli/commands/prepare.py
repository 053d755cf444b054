"""`agentctl prepare`: snapshot records in, prepared (keyed, chunked, hashed) records out."""

from __future__ import annotations

import click

from cli.context import AppContext, stdin_if_piped
from cli.errors import exit_for
from lib.pipeline.build import prepare_stage
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.records import JsonLinesSink, stage_inputs
from lib.pipeline.runner import run_stage


@click.command("prepare")
@click.option("--full", is_flag=True, help="Read every session summary records name, even unchanged ones.")
@click.pass_obj
def prepare_command(app: AppContext, full: bool) -> None:
    """Prepare sessions for publication: stable key, event chunks, content hashes.

    Reads `snapshot` records (and reads the sessions `summary` records name) from
    stdin; writes `prepared` records. Other records pass through unchanged.

    \b
    Example:
        agentctl list codex | agentctl prepare | agentctl publish
        agentctl read --source codex ID | agentctl prepare | jq .snapshotHash
    """
    sink = JsonLinesSink()
    with DriverPool(app.workspace.collection_driver) as drivers:
        stage = prepare_stage(app.workspace, drivers, full=full)
        run_stage(stage, stage_inputs((), stdin_if_piped(), stage.stage, sink), sink, progress=app.progress)
    exit_for(sink)

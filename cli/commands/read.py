"""`agentctl read`: read the sessions that summary records or arguments name."""

from __future__ import annotations

import click

from cli.context import AppContext, stdin_if_piped
from cli.errors import exit_for
from lib.errors import UsageError
from lib.pipeline.build import read_stage
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.records import JsonLinesSink, stage_inputs
from lib.pipeline.runner import run_stage


@click.command("read")
@click.argument("session_ids", nargs=-1)
@click.option("-s", "--source", "source_id", help="Source of the SESSION_IDS given as arguments.")
@click.option("--full", is_flag=True, help="Read every session, even those whose published copy is current.")
@click.pass_obj
def read_command(app: AppContext, session_ids: tuple[str, ...], source_id: str | None, full: bool) -> None:
    """Read whole sessions: `summary` records on stdin, or SESSION_IDS of --source.

    Writes one `snapshot` record per session read (with Git context), an `error`
    record per session that failed, and an `outcome` per source (SESSION_IDS: first
    a `source` record). Other records pass through unchanged. A listed session whose
    update time, title, archived and active equal its complete published copy's is
    not read: it becomes a `retained` record (--full reads it anyway).

    \b
    Example:
        agentctl list codex | agentctl read > sessions.jsonl
        agentctl read --source codex 01a22a97-85da-7782-be82-6201c96deaee
    """
    workspace = app.workspace
    if session_ids and not source_id:
        raise UsageError("missing-source", "session ids given without --source; say which source they belong to")
    if source_id:
        workspace.source_config(source_id)  # unknown source: a usage error before any work
    sink = JsonLinesSink()
    with DriverPool(workspace.collection_driver) as drivers:
        stage = read_stage(workspace, drivers, full=full or bool(session_ids))
        initial = ()
        if session_ids:
            # A targeted refresh: its sequence is allocated before the reads, so a
            # collection that began earlier cannot overwrite what it reads.
            target = workspace.open_target()
            initial = stage.read_ids(workspace.describe_source(source_id), list(session_ids),
                                     target.begin_session_observation(), target.observation_origin())
        stdin = None if session_ids else stdin_if_piped()
        run_stage(stage, stage_inputs(initial, stdin, stage.stage, sink), sink, progress=app.progress)
    exit_for(sink)

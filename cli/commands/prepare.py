"""`agentctl prepare`: snapshot records in, prepared (keyed, chunked, hashed) records out."""

from __future__ import annotations

import click

from cli.commands.read import make_read_stage
from cli.commands.streaming import exit_for, run_stage, stdin_if_piped
from cli.context import AppContext
from cli.pipeline import PrepareStage


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
    writer = run_stage(app, PrepareStage(make_read_stage(app, full=full)), stdin=stdin_if_piped())
    exit_for(writer)

"""`agentctl publish`: records in, Fabric state out."""

from __future__ import annotations

import click

from cli.commands.read import make_read_stage
from cli.commands.streaming import exit_for, run_stage, stdin_if_piped
from cli.context import AppContext
from cli.pipeline import DriverPool, PrepareStage
from cli.publishing import PublishStage


def make_publish_stage(app: AppContext, *, full: bool = False, drivers: DriverPool | None = None) -> PublishStage:
    """The publish stage over prepare and read. Its read stage judges retention by the
    publication's own prior index (read once, under the publish lock), not by a second
    read of the store."""
    read = make_read_stage(app, full=full, drivers=drivers, published=lambda: stage.published_sessions())
    stage = PublishStage(PrepareStage(read), app.open_target(), app.descriptor_of)
    return stage


@click.command("publish")
@click.option("--lock-timeout", type=float, default=600.0, show_default=True,
              help="Seconds to wait for another publication to finish (exit 4 after).")
@click.option("--full", is_flag=True, help="Read every session summary records name, even unchanged ones.")
@click.pass_obj
def publish_command(app: AppContext, lock_timeout: float, full: bool) -> None:
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
    app.lock_timeout = lock_timeout
    with app.locked_publication():
        writer = run_stage(app, make_publish_stage(app, full=full), stdin=stdin_if_piped())
    exit_for(writer)

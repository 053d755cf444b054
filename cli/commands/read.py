"""`agentctl read`: read the sessions that summary records or arguments name."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import click

from cli.commands.streaming import exit_for, run_stage, stdin_if_piped
from cli.context import AppContext
from cli.errors import EXIT_USAGE, CliError
from cli.pipeline import DriverPool, ReadStage
from cli.publishing import retain_unchanged
from lib.fabric.target import PublishedSession


def make_read_stage(
    app: AppContext,
    *,
    full: bool = False,
    drivers: DriverPool | None = None,
    published: Callable[[], Mapping[str, PublishedSession]] | None = None,
) -> ReadStage:
    """A read stage that retains (does not read) sessions whose published copy is
    current, unless `full`; the same rule `agentctl sync` uses. `published` supplies the
    copies (default: read from the store, if there is one)."""
    retain = None
    if not full:
        retain = retain_unchanged(
            published or app.published_sessions, lambda source_id: app.source_config(source_id).driver
        )
    return ReadStage(drivers or DriverPool(app.create_driver), retain=retain, git=app.git_resolver())


@click.command("read")
@click.argument("session_ids", nargs=-1)
@click.option("-s", "--source", "source_id", help="Source of the SESSION_IDS given as arguments.")
@click.option("--full", is_flag=True, help="Read every session, even those whose published copy is current.")
@click.pass_obj
def read_command(app: AppContext, session_ids: tuple[str, ...], source_id: str | None, full: bool) -> None:
    """Read whole sessions: `summary` records on stdin, or SESSION_IDS of --source.

    Writes one `snapshot` record per session read (with Git context), an `error`
    record per session that failed, and an `outcome` per source. Other records
    pass through unchanged. A listed session whose update time equals that of its
    complete published copy is not read: it becomes a `retained` record (--full
    reads it anyway).

    \b
    Example:
        agentctl list codex | agentctl read > sessions.jsonl
        agentctl read --source codex 01a22a97-85da-7782-be82-6201c96deaee
    """
    if session_ids and not source_id:
        raise CliError("session ids given without --source; say which source they belong to", EXIT_USAGE)
    stage = make_read_stage(app, full=full or bool(session_ids))
    if source_id:
        app.source_config(source_id)  # unknown source: a usage error before any work
    initial = stage.read_ids(source_id, list(session_ids)) if session_ids else ()
    writer = run_stage(app, stage, initial=initial, stdin=None if session_ids else stdin_if_piped())
    exit_for(writer)

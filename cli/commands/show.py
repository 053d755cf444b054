"""`agentctl show KEY`: one published session as a transcript, its manifest, or its events."""

from __future__ import annotations

import json
import shutil
import sys

import click

from cli.context import AppContext
from lib.errors import NotFoundError
from lib.fabric.session_reader import SessionNotFound
from lib.fabric.store_url import display_store_url
from lib.pipeline.records import json_default, to_json_line
from lib.transcript import DEFAULT_WIDTH, render_transcript


@click.command("show")
@click.argument("key")
@click.option("--events", is_flag=True, help="Write the session's native events, one JSON line each.")
@click.option("--json", "as_json", is_flag=True, help="The manifest as JSON even on a terminal.")
@click.pass_obj
def show_command(app: AppContext, key: str, events: bool, as_json: bool) -> None:
    """Show the published session KEY (as `agentctl sessions` lists it).

    On a terminal, a transcript: title, source, directory, branch, times and
    status, then every message with its role and time (long tool output folded).
    Piped or with --json, the manifest (summary, normalized messages, chunk
    descriptors) as one JSON document. With --events, every native event, one JSON
    line each, read one chunk at a time.

    \b
    Example:
        agentctl show codex/01a22a97-85da-7782-be82-6201c96deaee
        agentctl show codex/01a22a97-85da-7782-be82-6201c96deaee --json | jq .summary
        agentctl show codex/01a22a97-85da-7782-be82-6201c96deaee --events | jq .id
    """
    workspace = app.workspace
    if not workspace.store_exists():
        raise NotFoundError(
            "nothing-published", f"nothing is published yet in {display_store_url(workspace.resolved_store_url)}; run agentctl sync"
        )
    reader = workspace.session_reader()
    try:
        row = reader.row(key)
        manifest = reader.manifest_of(row)
    except SessionNotFound as exc:
        raise SessionNotFound(exc.code, f"{exc.message}; `agentctl sessions` lists the keys") from None
    if events:
        for _part, event in reader.events(manifest):
            sys.stdout.write(to_json_line(event))
        sys.stdout.flush()
        return
    terminal = sys.stdout.isatty()
    if as_json or not terminal:
        click.echo(json.dumps(manifest, ensure_ascii=False, indent=2 if terminal else None, default=json_default))
        return
    width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    click.echo("\n".join(render_transcript(manifest, row, width=width)))

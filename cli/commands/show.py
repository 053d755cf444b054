"""`agentctl show KEY`: one published session's manifest, and its events."""

from __future__ import annotations

import json
import sys

import click

from cli.context import AppContext
from lib.errors import NotFoundError
from lib.fabric.session_reader import SessionNotFound
from lib.pipeline.records import json_default, to_json_line


@click.command("show")
@click.argument("key")
@click.option("--events", is_flag=True, help="Write the session's native events, one JSON line each.")
@click.pass_obj
def show_command(app: AppContext, key: str, events: bool) -> None:
    """Show the published session KEY (as `agentctl sessions` lists it).

    Writes the manifest (summary, normalized messages, chunk descriptors) as one
    JSON document, or with --events every native event, one per line, read one
    chunk at a time.

    \b
    Example:
        agentctl show codex/01a22a97-85da-7782-be82-6201c96deaee
        agentctl show codex/01a22a97-85da-7782-be82-6201c96deaee --events | jq .id
    """
    workspace = app.workspace
    if not workspace.store_exists():
        raise NotFoundError(
            "nothing-published", f"nothing is published yet in {workspace.resolved_store_url}; run agentctl sync"
        )
    reader = workspace.session_reader()
    try:
        manifest = reader.manifest(key)
    except SessionNotFound as exc:
        raise SessionNotFound(exc.code, f"{exc.message}; `agentctl sessions` lists the keys") from None
    if not events:
        indent = 2 if sys.stdout.isatty() else None
        click.echo(json.dumps(manifest, ensure_ascii=False, indent=indent, default=json_default))
        return
    for _part, event in reader.events(manifest):
        sys.stdout.write(to_json_line(event))
    sys.stdout.flush()

"""`agentctl show KEY`: one published session's manifest, and its events."""

from __future__ import annotations

import json
import sys

import click

from cli.context import AppContext
from cli.errors import EXIT_NOT_FOUND, CliError
from cli.records import RecordWriter, _json_default
from lib.fabric.session_reader import SessionNotFound


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
    if not app.store_exists():
        raise CliError(f"nothing is published yet in {app.resolved_store_url}; run agentctl sync", EXIT_NOT_FOUND)
    reader = app.session_reader()
    try:
        manifest = reader.manifest(key)
    except SessionNotFound as exc:
        raise CliError(f"{exc}; `agentctl sessions` lists the keys", EXIT_NOT_FOUND) from None
    if not events:
        indent = 2 if sys.stdout.isatty() else None
        click.echo(json.dumps(manifest, ensure_ascii=False, indent=indent, default=_json_default))
        return
    writer = RecordWriter()
    for _part, event in reader.events(manifest):
        writer.stream.write(json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=_json_default) + "\n")
    writer.stream.flush()

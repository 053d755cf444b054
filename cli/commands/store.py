"""`agentctl store copy FROM TO`: copy a space between stores (lib/fabric/store_copy.py)."""

from __future__ import annotations

import sys

import click

from cli.context import AppContext
from lib.fabric.store_copy import copy_space, open_copy_store
from lib.fabric.store_lock import describe_holder
from lib.pipeline.records import JsonLinesSink
from lib.workspace import working_directory


@click.group("store")
def store_group() -> None:
    """Work on stores as a whole."""


@store_group.command("copy")
@click.argument("from_url", metavar="FROM")
@click.argument("to_url", metavar="TO")
@click.option("--lock-timeout", type=float, default=600.0, show_default=True,
              help="Seconds to wait for the space's publish and receipts locks (then exit 4).")
@click.option("--json", "as_json", is_flag=True, help="A JSON line even on a terminal.")
@click.pass_obj
def store_copy_command(
    app: AppContext, from_url: str, to_url: str, lock_timeout: float, as_json: bool
) -> None:
    """Copy the space (--space, default your identity's) from store FROM to store TO.

    Copies every cell with its labels, deletions and named sequences, then verifies the
    copy by cell count and value hashes (exit 1 when they differ). Resumable: run it
    again after an interruption and it copies only what is missing. Holds the space's
    publish and receipts locks in both stores while it runs; stop hosts first.

    \b
    Example:
        agentctl store copy sqlite:~/.local/state/agentctl/fabric.sqlite3 \\
            postgresql://me@db.example/agentctl
    """
    workspace = app.workspace
    base = working_directory()
    space = workspace.space_did
    source = open_copy_store(from_url, base, source=True)
    try:
        destination = open_copy_store(to_url, base, source=False)
        try:
            report = copy_space(
                source, destination, space,
                lock_timeout=lock_timeout,
                on_lock_wait=lambda holder: app.say(
                    f"agentctl: waiting for a lock of the space ({describe_holder(holder)})"),
            )
        finally:
            destination.close()
    finally:
        source.close()
    if as_json or not sys.stdout.isatty():
        JsonLinesSink().put(report.to_record())
        return
    print(f"copied space {space}: {report.cells} cells ({report.copied} written, "
          f"{report.unchanged} already there, {report.deleted} deleted), "
          f"{len(report.sequences)} sequences; verified")

"""`agentctl health`: the host's published health, a summary on a terminal, JSON when piped."""

from __future__ import annotations

import sys
from typing import Any

import click

from cli.context import AppContext
from lib.errors import NotFoundError
from lib.health_view import HealthView, read_health
from lib.pipeline.records import JsonLinesSink

ACTIVITY_LINES = 8


@click.command("health")
@click.option("--json", "as_json", is_flag=True, help="The JSON record even on a terminal.")
@click.pass_obj
def health_command(app: AppContext, as_json: bool) -> None:
    """Show the health the host (`agentctl serve`) published, and whether it runs.

    On a terminal, a summary: the status and since when, why it is not ready, each
    source's lifecycle and session count, commands pending and failed, the last
    collection and the latest activity. Piped or with --json, one `health` record:
    the published record plus `ageSeconds` and `hostRunning`. A host runs when it
    holds the executor lock; without one, the record's age is shown.

    Exits 0 when a running host is ready, 3 when it runs but is not ready
    (degraded, starting, stopping), 1 when no host runs (stopped, or a stale record
    no running host holds), 5 when no health was ever published.

    \b
    Example:
        agentctl health
        agentctl health --json | jq '.sources[] | {id, lifecycle}'
        agentctl health -q || echo "the agentctl host is not ready"
    """
    workspace = app.workspace
    view = read_health(workspace)
    if view.record is None:
        raise NotFoundError("no-health", "no health published; is agentctl serve running?")
    if as_json or not sys.stdout.isatty():
        JsonLinesSink().put({"record": "health", **view.to_wire()})
    else:
        click.echo("\n".join(summary_lines(view)))
    click.get_current_context().exit(int(view.exit_code))


def summary_lines(view: HealthView) -> list[str]:
    record: dict[str, Any] = view.record or {}
    host = record.get("host") or {}
    lines = [f"status: {record.get('status')} since {record.get('since') or host.get('startedAt')}"
             f" (host pid {host.get('pid')} on {host.get('hostname')}, agentctl {host.get('version')},"
             f" started {host.get('startedAt')})"]
    if not view.host_running:
        seconds = view.age_seconds
        age = f"{int(seconds)} seconds old" if seconds is not None else "of unknown age"
        lines.append(f"not running: the record is {age} and no host holds the executor lock")
        if view.lock_held:
            holder = view.lock_holder or {}
            lines[-1] = (f"not running: the record is {age}; the executor lock is held by pid "
                         f"{holder.get('pid', '?')} on {holder.get('hostname', '?')}, not by the host "
                         f"that published it")
    reasons = record.get("reasons") or []
    if reasons:
        lines.append("not ready: " + "; ".join(reasons))
    sources = record.get("sources") or []
    lines.append("sources:" if sources else "sources: none")
    for source in sources:
        count = source.get("sessionCount")
        complete = {True: "complete", False: "incomplete"}.get(source.get("complete"), "not collected")
        line = (f"  {source.get('id')}: {source.get('lifecycle')}, {complete}, "
                f"{'?' if count is None else count} sessions")
        errors = source.get("errors") or []
        if errors:
            line += f"; last error {errors[-1].get('code')}: {errors[-1].get('message')}"
        lines.append(line)
    commands = record.get("commands") or {}
    line = (f"commands: {'admitting' if commands.get('admitting') else 'not admitting'}, "
            f"{commands.get('pendingReceiptPublications', 0)} receipt publication(s) pending, "
            f"{commands.get('failedCommands', 0)} failed")
    error = commands.get("lastError")
    if error:
        line += f"; last error {error.get('code')}: {error.get('message')} at {error.get('at')}"
    lines.append(line)
    collection = record.get("collection") or {}
    interval = collection.get("intervalSeconds")
    line = "collection: " + (f"every {interval:g} s" if interval else "on request only")
    if collection.get("running"):
        line += f", running since {collection.get('lastStartedAt')}"
    if collection.get("pending"):
        line += ", another pending"
    if collection.get("lastFinishedAt"):
        error = collection.get("lastError")
        if error:
            line += f"; last failed at {collection['lastFinishedAt']}: {error.get('code')}: {error.get('message')}"
        else:
            done = "complete" if collection.get("lastComplete") else "incomplete"
            line += (f"; last finished {collection['lastFinishedAt']}, {done}, "
                     f"{collection.get('lastSessionCount')} sessions")
    else:
        line += "; none finished yet"
    lines.append(line)
    activity = (record.get("activity") or [])[-ACTIVITY_LINES:]
    if activity:
        lines.append("activity:")
        for event in activity:
            detail = ", ".join(f"{key} {value}" for key, value in event.items()
                               if key not in ("seq", "at", "kind", "message"))
            message = event.get("message")
            text = f"{message} ({detail})" if message and detail else message or detail
            lines.append(f"  {event.get('at')} {event.get('kind')}" + (f": {text}" if text else ""))
    return lines

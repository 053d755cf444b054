"""`agentctl serve`: the host a person leaves running (lib/host.py)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

import click

from cli.context import AppContext
from cli.receipt_output import ReceiptPrinter
from lib.errors import ExitCode
from lib.host import Host


@click.command("serve")
@click.option("--interval", type=click.FloatRange(min=0), default=900.0, show_default=True,
              help="Seconds between complete collections (0: only at start, on SIGHUP and on request).")
@click.option("--json", "as_json", is_flag=True, help="Receipts as JSON lines even on a terminal.")
@click.pass_obj
def serve_command(app: AppContext, interval: float, as_json: bool) -> None:
    """Keep every session published and carry out commands, until stopped.

    Takes the executor lock (a second host or `agentctl command run` for the same
    store and space exits 4), starts every enabled source, publishes receipts a
    stopped executor left, runs a complete collection, then carries out commands as
    they arrive while collecting again every --interval seconds and on SIGHUP. SIGTERM
    or Ctrl-C stops it in order: no new commands, the running collection and commands
    finish, the drivers stop, health says `stopped` (exit 143, or 130 for Ctrl-C).
    `agentctl health` tells how it is doing.

    \b
    Example:
        agentctl serve --interval 600
        kill -HUP $(pgrep -f 'agentctl serve')    # collect now
    """
    printer = ReceiptPrinter(as_json)
    host = Host(app.workspace, interval=interval, notify=app.say, on_receipt=printer.print)
    stopped_by: list[int] = []
    with _signals(host, stopped_by, app):
        app.say(f"agentctl: serving (collections every {interval:g} s; SIGHUP collects now; Ctrl-C stops)")
        host.run()
    if stopped_by:
        code = ExitCode.TERMINATED if stopped_by[0] == signal.SIGTERM else 130
        click.get_current_context().exit(int(code))


@contextmanager
def _signals(host: Host, stopped_by: list[int], app: AppContext) -> Iterator[None]:
    """SIGTERM and SIGINT begin the orderly stop (a second one only says it is under
    way: it never skips the drain); SIGHUP asks for a collection."""

    def stop(signum: int, _frame: object) -> None:
        if stopped_by:
            app.say("agentctl: already stopping; waiting for the running commands to finish")
            return
        stopped_by.append(signum)
        app.say("agentctl: stopping: no new commands; finishing what runs")
        host.stop()

    def collect(_signum: int, _frame: object) -> None:
        host.request_collection("SIGHUP")

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, collect)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

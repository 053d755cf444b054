"""`agentctl recover`: settle what a stopped executor left in its ledger."""

from __future__ import annotations

import click

from cli.context import AppContext
from cli.receipt_output import ReceiptPrinter
from lib.executor import Executor


@click.command("recover")
@click.option("--json", "as_json", is_flag=True, help="JSON lines even on a terminal.")
@click.pass_obj
def recover_command(app: AppContext, as_json) -> None:  # noqa: ANN001
    """Publish the receipts an executor left unpublished.

    A command that was running when its executor died (killed, crashed, the machine
    lost power) is marked `unknown`: agentctl cannot tell whether the agent finished
    it, so it is never run again by itself. Receipts whose publication failed are
    published now. Prints every receipt it published; running it again publishes
    nothing new. Takes the executor lock, so it fails (exit 4) while an executor runs
    (which recovers by itself when it starts).

    \b
    Example:
        agentctl recover
    """
    printer = ReceiptPrinter(as_json)
    with Executor(app.workspace) as executor:
        recovered = executor.recover()
    for receipt in recovered:
        printer.print(receipt)
    if not recovered:
        app.say("agentctl: nothing to recover")

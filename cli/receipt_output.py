"""Receipts for people and programs: `receipt` JSON lines when piped (or --json), one
readable line each on a terminal; and the exit code a receipt's status ends with."""

from __future__ import annotations

import sys
import threading

import click

from lib.pipeline.records import JsonLinesSink
from lib.receipts import STATUS_EXIT_CODES, CommandReceipt


class ReceiptPrinter:
    """Thread-safe: an executor's worker threads print receipts as they complete."""

    def __init__(self, as_json: bool = False) -> None:
        self.as_json = as_json or not sys.stdout.isatty()
        self._sink = JsonLinesSink() if self.as_json else None
        self._lock = threading.Lock()

    def print(self, receipt: CommandReceipt) -> None:
        with self._lock:
            if self._sink is not None:
                self._sink.put({"record": "receipt", **receipt.to_wire()})
            else:
                click.echo(describe_receipt(receipt))


def describe_receipt(receipt: CommandReceipt) -> str:
    queue = f" (queue {receipt.producer})" if receipt.producer else ""
    line = f"{receipt.status}: command {receipt.command_id}{queue} on {receipt.source_id}/{receipt.native_session_id}"
    if receipt.provider_operation_id:
        line += f", operation {receipt.provider_operation_id}"
    if receipt.error is not None:
        line += f"; {receipt.error.code}: {receipt.error.message}"
    return line


def exit_by_status(receipt: CommandReceipt) -> None:
    """End the command with the exit code of the receipt's terminal status."""
    code = STATUS_EXIT_CODES.get(receipt.status)
    if code:
        click.get_current_context().exit(int(code))

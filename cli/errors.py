"""Ending a command: the exit code its records earned."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from lib.errors import ExitCode

if TYPE_CHECKING:
    from lib.pipeline.records import RecordSink


def exit_for(sink: RecordSink) -> None:
    """Exit 3 (partial) when any error record went out, else 0."""
    click.get_current_context().exit(ExitCode.PARTIAL if sink.errors else ExitCode.OK)

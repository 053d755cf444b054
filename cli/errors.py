"""Exit codes and the one-line error every user-caused failure gets."""

from __future__ import annotations

import click

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3
EXIT_LOCKED = 4
EXIT_NOT_FOUND = 5


class CliError(click.ClickException):
    """A failure with one clear line on stderr and a documented exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def show(self, file=None) -> None:  # noqa: ANN001 - click's signature
        click.echo(f"agentctl: {self.format_message()}", err=True)

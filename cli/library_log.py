"""The library's log on stderr, installed by the group's callback, which runs only when a
subcommand does (so `agentctl --help` and `--version` do not import logging)."""

from __future__ import annotations

import logging

import click

from cli.context import AppContext

LOGGERS = ("agentctl", "lib")  # provider output; the library modules' own loggers


class LibraryLog(logging.Handler):
    """Warnings (a command skipped as invalid, a receipt not published yet) unless -q;
    details (a failing provider's own output) only with -v."""

    def __init__(self, app: AppContext) -> None:
        super().__init__()
        self.app = app

    def emit(self, record: logging.LogRecord) -> None:
        shown = self.app.verbose or (record.levelno >= logging.WARNING and not self.app.quiet)
        if shown:
            click.echo(f"agentctl: {record.getMessage()}", err=True)


def install_library_log(app: AppContext) -> None:
    """The library's loggers write through `app`'s -v and -q (replacing an earlier run's
    handler when main() runs twice in one process)."""
    for name in LOGGERS:
        library_log = logging.getLogger(name)
        for handler in [h for h in library_log.handlers if isinstance(h, LibraryLog)]:
            library_log.removeHandler(handler)
        library_log.addHandler(LibraryLog(app))
        library_log.setLevel(logging.INFO)
        library_log.propagate = False

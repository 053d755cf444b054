"""The `agentctl` command group: global options (cli/options.py) and ending with an error's
exit code, or with 143 on SIGTERM."""

from __future__ import annotations

import logging
import re
import signal
import sys
import traceback

import click

from cli.commands import COMMANDS
from cli.context import AppContext
from cli.options import global_options, take_group_options, with_global_options
from lib.errors import CodedError, ExitCode


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@global_options
@click.version_option(package_name="agentctl", prog_name="agentctl")
@click.pass_context
def cli(ctx: click.Context, **options: object) -> None:
    """Collect coding-agent sessions into a Fabric store and drive the agents from it.

    Subcommands pipe JSON lines to each other:

    \b
        agentctl list codex | agentctl read | agentctl prepare | agentctl publish

    The global options go before or after the subcommand (agentctl sync -q).
    """
    app = ctx.ensure_object(AppContext)
    take_group_options(app, options)
    ctx.call_on_close(app.close)


for command in COMMANDS:
    cli.add_command(with_global_options(command))

TERMINATED = ExitCode.TERMINATED  # 128 + SIGTERM: what a shell reports for a process SIGTERM ended


class Terminated(BaseException):
    """SIGTERM arrived. Raised in the main thread, as KeyboardInterrupt is for SIGINT, so that
    every finally block and context manager runs on the way out: the drivers stop their
    providers (and what those started), locks are released, an unfinished publication
    commits nothing. Not a KeyboardInterrupt, which click turns into an abort of its own."""


def _terminate(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated()


class LibraryLog(logging.Handler):
    """The library's log on stderr: warnings (a command skipped as invalid, a receipt not
    published yet) unless -q; details (a failing provider's own output) only with -v."""

    def __init__(self, app: AppContext) -> None:
        super().__init__()
        self.app = app

    def emit(self, record: logging.LogRecord) -> None:
        shown = self.app.verbose or (record.levelno >= logging.WARNING and not self.app.quiet)
        if shown:
            click.echo(f"agentctl: {record.getMessage()}", err=True)


def main() -> None:
    app = AppContext()  # filled in by the options, before and after the subcommand
    for name in ("agentctl", "lib"):  # provider output; the library modules' own loggers
        library_log = logging.getLogger(name)
        library_log.addHandler(LibraryLog(app))
        library_log.setLevel(logging.INFO)
        library_log.propagate = False
    signal.signal(signal.SIGTERM, _terminate)
    try:
        # Without standalone mode click returns the code of `ctx.exit(code)` instead of exiting.
        code = cli.main(standalone_mode=False, obj=app)
    except CodedError as exc:
        # Every error a user can cause: one line, and the exit code its class names.
        if app.verbose:
            traceback.print_exc()
        click.echo(f"agentctl: {exc.message}", err=True)
        sys.exit(int(exc.exit_code))
    except click.exceptions.Abort:
        click.echo("agentctl: aborted", err=True)
        sys.exit(ExitCode.FAILURE)
    except click.UsageError as exc:
        # click's three lines (Usage, Try, Error) as one: what was wrong; where to look
        command = exc.ctx.command_path if exc.ctx is not None else "agentctl"
        click.echo(f"agentctl: {one_line(exc.format_message())}; see {command} --help", err=True)
        sys.exit(ExitCode.USAGE)
    except click.ClickException as exc:
        click.echo(f"agentctl: {one_line(exc.format_message())}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        # The reader went away (`agentctl list | head`): not an error of ours.
        sys.stderr.close()
        sys.exit(0)
    except KeyboardInterrupt:
        click.echo("agentctl: interrupted", err=True)
        sys.exit(130)
    except Terminated:
        click.echo("agentctl: terminated (SIGTERM)", err=True)
        sys.exit(TERMINATED)
    except Exception as exc:  # the last guard: one line, never a traceback unless -v
        if app.verbose:
            traceback.print_exc()
        click.echo(f"agentctl: internal error: {exc.__class__.__name__}: {exc} (run with -v for details)", err=True)
        sys.exit(ExitCode.FAILURE)
    sys.exit(code if isinstance(code, int) else 0)


def one_line(message: str) -> str:
    """A click message as one lowercase clause: "No such option: --x. Did you mean
    --y?" becomes "no such option: --x (did you mean --y?)"."""
    text = " ".join(message.split())
    text = re.sub(r"\.? ?Did you mean (.*)$", r" (did you mean \1)", text)
    text = text.rstrip(".")
    return text[:1].lower() + text[1:]


__all__ = ["cli", "main", "one_line"]

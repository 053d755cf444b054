"""`agentctl`'s entry point: the group (cli/group.py) run with every error as one line and
its exit code, 143 on SIGTERM. `agentctl --version` alone is answered before click or
anything else is imported, and `agentctl --help` (or `-h`) alone is rendered without click
(cli/group_help.py), and `agentctl sync` on an unchanged home is answered from its kept
answer when every input is as it was kept (cli/fast_sync.py)."""

from __future__ import annotations

import sys

from cli.version import VERSION


class Terminated(BaseException):
    """SIGTERM arrived. Raised in the main thread, as KeyboardInterrupt is for SIGINT, so that
    every finally block and context manager runs on the way out: the drivers stop their
    providers (and what those started), locks are released, an unfinished publication
    commits nothing. Not a KeyboardInterrupt, which click turns into an abort of its own."""


def _terminate(signum: int, frame: object) -> None:
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated()


def main() -> None:
    try:
        _main()
    finally:
        collector = sys.modules.get("lib.gc_pause")  # imported by the normal path only
        if collector is not None:
            collector.freeze_at_exit()  # the teardown need not walk what lives to the end


def _main() -> None:
    if sys.argv[1:] == ["--version"]:  # what click's --version prints, without click
        print(f"agentctl, version {VERSION}")
        sys.exit(0)
    if sys.argv[1:] in (["--help"], ["-h"]) and _print_group_help():  # click's help, without click
        sys.exit(0)
    if "sync" in sys.argv[1:3] and _answer_idle_sync():  # an unchanged home's answer, without click
        sys.exit(0)
    import signal

    from lib.gc_pause import hold_for_start_up

    hold_for_start_up()  # until the command is loaded (cli/lazy_group.py): imports only
    import click

    from cli.context import AppContext
    from cli.group import cli
    from lib.errors import CodedError, ExitCode

    app = AppContext()  # filled in by the options, before and after the subcommand
    signal.signal(signal.SIGTERM, _terminate)
    try:
        # Without standalone mode click returns the code of `ctx.exit(code)` instead of exiting.
        code = cli.main(standalone_mode=False, obj=app)
    except CodedError as exc:
        # Every error a user can cause: one line, and the exit code its class names.
        if app.verbose:
            _print_traceback()
        click.echo(f"agentctl: {exc.message}", err=True)
        sys.exit(int(exc.exit_code))
    except click.exceptions.Abort:
        click.echo("agentctl: aborted", err=True)
        sys.exit(ExitCode.FAILURE)
    except click.UsageError as exc:
        # click's three lines (Usage, Try, Error) as one: what was wrong; where to look
        command = exc.ctx.command_path if exc.ctx is not None else "agentctl"
        # a group without its subcommand: click's message is the whole help text
        what = "no command given" if isinstance(exc, click.exceptions.NoArgsIsHelpError) else one_line(
            exc.format_message())
        click.echo(f"agentctl: {what}; see {command} --help", err=True)
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
        sys.exit(ExitCode.TERMINATED)  # 128 + SIGTERM: what a shell reports for a process SIGTERM ended
    except Exception as exc:  # the last guard: one line, never a traceback unless -v
        if app.verbose:
            _print_traceback()
        click.echo(f"agentctl: internal error: {exc.__class__.__name__}: {exc} (run with -v for details)", err=True)
        sys.exit(ExitCode.FAILURE)
    sys.exit(code if isinstance(code, int) else 0)


def _print_group_help() -> bool:
    from cli.group_help import print_group_help

    try:
        return print_group_help()
    except BrokenPipeError:  # the reader went away: what click's main does for a help it renders
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the flush at exit is silent
        sys.exit(1)


def _answer_idle_sync() -> bool:
    """cli/fast_sync.py's answer, with SIGTERM and ^C ending the run as they end the
    normal path's."""
    import signal

    from cli.fast_sync import answer_idle_sync

    signal.signal(signal.SIGTERM, _terminate)
    try:
        if answer_idle_sync(sys.argv[1:]):
            return True
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as before main() sets its own
        return False
    except BrokenPipeError:  # the reader went away: click's main ends a sync so (exit 1, silent)
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the flush at exit is silent
        sys.exit(1)
    except KeyboardInterrupt:
        print("agentctl: interrupted", file=sys.stderr)
        sys.exit(130)
    except Terminated:
        print("agentctl: terminated (SIGTERM)", file=sys.stderr)
        sys.exit(143)


def _print_traceback() -> None:
    import traceback

    traceback.print_exc()


def one_line(message: str) -> str:
    """A click message as one lowercase clause: "No such option: --x. Did you mean
    --y?" becomes "no such option: --x (did you mean --y?)"."""
    import re

    text = " ".join(message.split())
    text = re.sub(r"\.? ?Did you mean (.*)$", r" (did you mean \1)", text)
    text = text.rstrip(".")
    return text[:1].lower() + text[1:]


def __getattr__(name: str) -> object:
    if name == "cli":  # the click group, as `from cli.main import cli` found it before
        from cli.group import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["main", "one_line"]

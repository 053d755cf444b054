"""The `agentctl` command group: global options and error -> exit code mapping."""

from __future__ import annotations

import sys
import traceback

import click

from cli.commands import COMMANDS
from cli.context import AppContext
from lib.errors import CodedError, ExitCode
from lib.workspace import Workspace


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--config", "config_path", envvar="AGENTCTL_CONFIG", type=click.Path(dir_okay=False),
              help="Configuration file (default ~/.config/agentctl/config.toml).")
@click.option("--store", envvar="AGENTCTL_STORE", help="Store URL (default sqlite:///<state dir>/fabric.sqlite3).")
@click.option("--space", envvar="AGENTCTL_SPACE", help="Space DID to publish into (default: your identity's DID).")
@click.option("--identity", "identity_path", envvar="AGENTCTL_IDENTITY", type=click.Path(dir_okay=False),
              help="Ed25519 identity key file (default <state dir>/identity.json).")
@click.option("--state-dir", envvar="AGENTCTL_STATE_DIR", type=click.Path(file_okay=False),
              help="State directory (default ~/.local/state/agentctl).")
@click.option("-v", "--verbose", count=True, help="More detail; tracebacks on errors.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars or messages.")
@click.version_option(package_name="agentctl", prog_name="agentctl")
@click.pass_context
def cli(ctx: click.Context, config_path, store, space, identity_path, state_dir, verbose, quiet) -> None:
    """Collect coding-agent sessions into a Fabric store and drive the agents from it.

    Subcommands pipe JSON lines to each other:

    \b
        agentctl list codex | agentctl read | agentctl prepare | agentctl publish
    """
    app = AppContext(verbose=verbose, quiet=quiet)
    app.workspace = Workspace(
        config_path=config_path,
        store_url=store,
        space=space,
        identity_path=identity_path,
        state_dir=state_dir,
        notify=app.say,
    )
    ctx.obj = app
    ctx.call_on_close(app.workspace.close)


for command in COMMANDS:
    cli.add_command(command)


def main() -> None:
    try:
        # Without standalone mode click returns the code of `ctx.exit(code)` instead of exiting.
        code = cli.main(standalone_mode=False)
    except CodedError as exc:
        # Every error a user can cause: one line, and the exit code its class names.
        if _verbose():
            traceback.print_exc()
        click.echo(f"agentctl: {exc.message}", err=True)
        sys.exit(int(exc.exit_code))
    except click.exceptions.Abort:
        click.echo("agentctl: aborted", err=True)
        sys.exit(ExitCode.FAILURE)
    except click.ClickException as exc:
        exc.show()
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
    except Exception as exc:  # the last guard: one line, never a traceback unless -v
        if _verbose():
            traceback.print_exc()
        click.echo(f"agentctl: internal error: {exc.__class__.__name__}: {exc} (run with -v for details)", err=True)
        sys.exit(ExitCode.FAILURE)
    sys.exit(code if isinstance(code, int) else 0)


def _verbose() -> bool:
    return any(arg in ("-v", "--verbose", "-vv") for arg in sys.argv)


__all__ = ["cli", "main"]

"""The `agentctl` click group: the global options (cli/options.py) and the subcommands,
each imported only when it runs or its --help is asked (cli/lazy_group.py)."""

from __future__ import annotations

import click

from cli.commands import COMMAND_TABLE
from cli.context import AppContext
from cli.lazy_group import LazyGroup
from cli.options import global_options, take_group_options, with_global_options
from cli.version import VERSION


@click.group(cls=LazyGroup, table=COMMAND_TABLE, prepare=with_global_options,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@global_options
@click.version_option(VERSION, prog_name="agentctl", message="%(prog)s, version %(version)s")
@click.pass_context
def cli(ctx: click.Context, **options: object) -> None:
    """Collect coding-agent sessions into a Fabric store and drive the agents from it.

    Subcommands pipe JSON lines to each other:

    \b
        agentctl list codex | agentctl read | agentctl prepare | agentctl publish

    The global options go before or after the subcommand (agentctl sync -q).
    """
    from cli.library_log import install_library_log  # a subcommand runs: the library may log

    app = ctx.ensure_object(AppContext)
    install_library_log(app)
    take_group_options(app, options)
    ctx.call_on_close(app.close)

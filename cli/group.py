"""The `agentctl` click group: the global options (cli/options.py) and the subcommands,
each imported only when it runs or its --help is asked (cli/lazy_group.py)."""

from __future__ import annotations

import click

from cli.commands import COMMAND_TABLE
from cli.context import AppContext
from cli.group_declarations import (
    GROUP_CONTEXT_SETTINGS,
    GROUP_HELP,
    OPTIONS_METAVAR,
    SUBCOMMAND_METAVAR,
    VERSION_HELP,
)
from cli.lazy_group import LazyGroup
from cli.options import global_options, take_group_options, with_global_options
from cli.version import VERSION


# The help, the context settings and the options are declared in cli/group_declarations.py,
# which `agentctl --help` renders from without click (cli/group_help.py).
@click.group(cls=LazyGroup, table=COMMAND_TABLE, prepare=with_global_options, help=GROUP_HELP,
             options_metavar=OPTIONS_METAVAR, subcommand_metavar=SUBCOMMAND_METAVAR,
             context_settings=GROUP_CONTEXT_SETTINGS)
@global_options
@click.version_option(VERSION, prog_name="agentctl", message="%(prog)s, version %(version)s", help=VERSION_HELP)
@click.pass_context
def cli(ctx: click.Context, **options: object) -> None:
    """The group's callback: a subcommand runs (the help is GROUP_HELP)."""
    from cli.library_log import install_library_log  # a subcommand runs: the library may log

    app = ctx.ensure_object(AppContext)
    install_library_log(app)
    take_group_options(app, options)
    ctx.call_on_close(app.close)

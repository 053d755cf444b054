"""A click group whose subcommands are imported when they are used: `agentctl sync`
imports cli/commands/sync.py (and what it needs from lib/) and no other command's module.
`agentctl --help` lists the commands from their table entries, without importing any."""

from __future__ import annotations

from collections.abc import Callable

import click

from cli.commands import CommandEntry


class LazyGroup(click.Group):
    """`table` names the subcommands; `prepare` is applied once to each loaded command
    (cli/options.py adds the global options)."""

    def __init__(self, *args, table: tuple[CommandEntry, ...], prepare: Callable[[click.Command], click.Command],
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.table = {entry.name: entry for entry in table}
        self.prepare = prepare

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.table})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in self.table:
            command = self.prepare(self.table[cmd_name].load())
            self.commands[cmd_name] = command
            from lib.gc_pause import end_start_up

            end_start_up()  # the command's modules are in: the objects made so far live on
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own listing, with each not yet loaded command's short help from its
        table entry instead of its module."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is None:  # shortened as click shortens the command's own help
                command = click.Command(name, help=self.table[name].short_help)
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

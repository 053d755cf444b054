"""The lazy command group (cli/lazy_group.py) against the real commands: the static table
cannot drift from them, `agentctl --help` lists exactly what loading every command would
list, every command is still reachable, and an unknown one is still one line, exit 2."""

from __future__ import annotations

import click
import pytest

from cli.commands import COMMAND_TABLE
from cli.lazy_group import LazyGroup
from lib.errors import ExitCode
from tests.support.cli import REPO, agentctl_env, run
from tests.test_startup_imports import run_with_imports


def _loaded() -> list[tuple[object, click.Command]]:
    return [(entry, entry.load()) for entry in COMMAND_TABLE]


def test_each_table_entry_is_its_real_command_with_its_short_help():
    for entry, command in _loaded():
        assert isinstance(command, click.Command), entry.name
        assert command.name == entry.name
        assert command.get_short_help_str(limit=10**6) == entry.short_help, entry.name
        assert not command.hidden and not command.deprecated, entry.name  # the table lists every one as plain


def test_the_table_names_every_command_module_once():
    modules = {f"cli.commands.{path.stem}" for path in (REPO / "cli" / "commands").glob("*.py")
               if path.stem != "__init__"}
    assert sorted(entry.module for entry in COMMAND_TABLE) == sorted(modules)
    assert len({entry.name for entry in COMMAND_TABLE}) == len(COMMAND_TABLE)


def _listing(group: click.Group, width: int) -> str:
    formatter = click.HelpFormatter(width=width)
    group.format_commands(click.Context(group), formatter)
    return formatter.getvalue()


@pytest.mark.parametrize("width", [100, 80, 60, 40])
def test_the_lazy_listing_equals_the_listing_of_the_loaded_commands(width):
    lazy = LazyGroup("agentctl", table=COMMAND_TABLE, prepare=lambda command: command)
    eager = click.Group("agentctl", commands=[command for _, command in _loaded()])
    assert _listing(lazy, width) == _listing(eager, width)
    assert lazy.commands == {}  # listed without loading any


def test_the_lazy_listing_uses_a_loaded_commands_own_help():
    lazy = LazyGroup("agentctl", table=COMMAND_TABLE, prepare=lambda command: command)
    assert lazy.get_command(click.Context(lazy), "sync") is COMMAND_TABLE[4].load()
    eager = click.Group("agentctl", commands=[command for _, command in _loaded()])
    assert _listing(lazy, 100) == _listing(eager, 100)
    assert set(lazy.commands) == {"sync"}


def test_the_installed_help_lists_every_command(tmp_path):
    result = run(["--help"], agentctl_env(tmp_path))
    assert result.returncode == 0, result.stderr
    listed = result.stdout.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed if line.strip()] == sorted(e.name for e in COMMAND_TABLE)


def test_every_command_of_a_group_is_reachable_with_the_global_options(tmp_path):
    env = agentctl_env(tmp_path)
    for entry, command in _loaded():
        if not isinstance(command, click.Group):
            continue
        for sub in command.commands:
            result = run([entry.name, sub, "--help"], env)
            assert result.returncode == 0, (entry.name, sub, result.stderr)
            assert result.stdout.startswith(f"Usage: agentctl {entry.name} {sub} ")
            assert "--state-dir" in result.stdout and "-q, --quiet" in result.stdout


def test_a_subcommand_runs_through_the_lazy_group(tmp_path):
    # `sessions` on an empty store: the command's module loaded, its callback run, exit 0
    result = run(["sessions", "--json", "--store", f"sqlite:///{tmp_path / 'fabric.sqlite3'}"], agentctl_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("name", ["bogus", "syncs", "store-copy"])
def test_an_unknown_command_is_one_line_and_exit_2_importing_no_command(tmp_path, name):
    result = run_with_imports([name], agentctl_env(tmp_path))
    assert result.returncode == ExitCode.USAGE == 2
    assert result.stderr == f"agentctl: no such command '{name}'; see agentctl --help"
    assert result.stdout == ""
    assert result.modules.isdisjoint({entry.module for entry in COMMAND_TABLE})


def test_an_unknown_subcommand_of_a_group_is_one_line_and_exit_2(tmp_path):
    result = run(["store", "paste"], agentctl_env(tmp_path))
    assert result.returncode == 2
    assert result.stderr == "agentctl: no such command 'paste'; see agentctl store --help\n"


@pytest.mark.parametrize("words", [[], ["command"], ["store"]], ids=["agentctl", "command", "store"])
def test_a_group_without_its_subcommand_is_one_short_line_and_exit_2(tmp_path, words):
    result = run(words, agentctl_env(tmp_path))
    assert result.returncode == 2
    assert result.stderr == f"agentctl: no command given; see {' '.join(['agentctl', *words])} --help\n"

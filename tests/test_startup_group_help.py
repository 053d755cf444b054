"""`agentctl --help` rendered without click (cli/group_help.py) is byte for byte what
click renders for the real group, at every terminal width, on a terminal and off it;
and the fast renderer cannot fall behind the click group: an option or command added
to one and not the other fails here."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import click
import pytest

from cli import group_help
from cli.commands import COMMAND_TABLE
from cli.group import cli
from cli.group_declarations import GROUP_HELP
from tests.support.cli import AGENTCTL, agentctl_env, run_on_terminal
from tests.test_startup_imports import run_with_imports


def click_help(group: click.Group, prog: str = "agentctl") -> str:
    """What click prints for `prog --help` (its get_help, plus echo's newline)."""
    with click.Context(group, info_name=prog, **group.context_settings) as ctx:
        return group.get_help(ctx) + "\n"


def fast_help(prog: str = "agentctl") -> str:
    return group_help.render(prog, group_help.help_width()) + "\n"


def test_at_every_width_the_fast_help_is_clicks(monkeypatch):
    for columns in [*range(1, 260), 1000]:
        monkeypatch.setenv("COLUMNS", str(columns))
        assert fast_help() == click_help(cli), columns


@pytest.mark.parametrize("columns", ["", "0", "-5", "wide"])
def test_without_a_usable_columns_the_fast_help_is_clicks(monkeypatch, columns):
    # COLUMNS empty, zero, negative or not a number: both ask the terminal, else use 80
    monkeypatch.setenv("COLUMNS", columns)
    assert fast_help() == click_help(cli)


@pytest.mark.parametrize("prog", ["agentctl", "a", "agentctl-with-a-long-name", "x" * 40, "y" * 90])
def test_for_any_program_name_the_usage_line_is_clicks(monkeypatch, prog):
    for columns in (20, 60, 80, 120):
        monkeypatch.setenv("COLUMNS", str(columns))
        assert fast_help(prog) == click_help(cli, prog), (prog, columns)


def test_the_group_help_needs_no_cleaning():
    # click shows inspect.cleandoc(help); the fast path shows GROUP_HELP as it is
    assert cli.help == GROUP_HELP == inspect.cleandoc(GROUP_HELP)
    assert "\f" not in GROUP_HELP and "\x1b" not in GROUP_HELP


def test_the_fast_rows_are_the_click_groups_own_options_and_commands():
    """One source of truth: an option or a command added to the click group and not to
    the declarations (or the table) the fast renderer reads makes these differ."""
    with click.Context(cli, info_name="agentctl", **cli.context_settings) as ctx:
        records = [param.get_help_record(ctx) for param in cli.get_params(ctx)]
        assert [record for record in records if record is not None] == group_help.option_rows()
        assert all(not isinstance(param, click.Argument) for param in cli.get_params(ctx))
        assert cli.list_commands(ctx) == sorted(entry.name for entry in COMMAND_TABLE)
        assert cli.epilog is None and not cli.deprecated


def test_an_option_added_to_the_click_group_alone_is_caught(monkeypatch):
    # what the test above guards against, shown: the renders no longer agree
    monkeypatch.setenv("COLUMNS", "80")
    extra = click.Option(["--extra"], help="An option the fast renderer does not know.")
    cli.params.insert(0, extra)
    try:
        assert fast_help() != click_help(cli)
    finally:
        cli.params.remove(extra)
    assert fast_help() == click_help(cli)


def test_a_command_added_to_the_click_group_alone_is_caught(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    cli.add_command(click.Command("zzz", help="A command the table does not name."))
    try:
        assert fast_help() != click_help(cli)
    finally:
        del cli.commands["zzz"]
    assert fast_help() == click_help(cli)


@pytest.mark.parametrize("columns", [None, "20", "72", "100", "250"])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_the_installed_fast_help_equals_clicks_off_a_terminal(tmp_path, columns, flag):
    """`agentctl --help` (fast) against `agentctl -q --help` (click renders the same
    group help), stdout a pipe, COLUMNS given or not."""
    env = agentctl_env(tmp_path)
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = columns
    fast = run_with_imports([flag], env)
    slow = run_with_imports(["-q", flag], env)
    assert fast.returncode == slow.returncode == 0, (fast.stderr, slow.stderr)
    assert "click" not in fast.modules and "click" in slow.modules  # each took the path meant
    assert fast.stdout == slow.stdout
    assert fast.stdout.startswith("Usage: agentctl [OPTIONS] COMMAND [ARGS]...\n")


@pytest.mark.parametrize("columns", [30, 64, 81, 140])
def test_the_installed_fast_help_equals_clicks_on_a_terminal(tmp_path, columns):
    env = agentctl_env(tmp_path)
    fast = run_on_terminal(["--help"], env, columns=columns, timeout=120)
    slow = run_on_terminal(["-q", "--help"], env, columns=columns, timeout=120)
    assert fast.returncode == slow.returncode == 0
    assert fast.stdout == slow.stdout
    assert "Commands:\n" in fast.stdout


@pytest.mark.parametrize("args", [["--help", "sync"], ["sync", "--help"], ["--help", "--help"], ["-hq"]])
def test_anything_but_a_bare_help_is_clicks(tmp_path, args):
    result = run_with_imports(args, agentctl_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "click" in result.modules
    assert result.stdout.startswith("Usage: agentctl")


def test_a_module_run_is_left_to_click(monkeypatch):
    # `python -m pkg`: click names the program after the module, not argv[0]
    main = type(sys)("__main__")
    main.__package__ = "some_package"
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert group_help.program_name() is None
    assert group_help.print_group_help() is False


def test_a_help_written_into_a_closed_pipe_ends_as_clicks_does(tmp_path):
    # the reader is gone before the help is written (`agentctl --help | true`): click's
    # main exits 1 silently; the fast path does the same
    def closed_pipe(args: list[str]) -> tuple[int, str]:
        reader, writer = os.pipe()
        os.close(reader)
        try:
            done = subprocess.run([AGENTCTL, *args], env=agentctl_env(tmp_path), stdin=subprocess.DEVNULL,
                                  stdout=writer, stderr=subprocess.PIPE, text=True, timeout=120)
        finally:
            os.close(writer)
        return done.returncode, done.stderr

    assert closed_pipe(["--help"]) == closed_pipe(["-q", "--help"]) == (1, "")

"""The global options, defined once: before the subcommand they are the group's
(`agentctl -q sync`), after it every subcommand's (`agentctl sync -q`), as people type
them. A value given after the subcommand wins over one given before it; the
environment variables fill in what neither gives. `-v` counts on both sides.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from cli.context import AppContext
from cli.group_declarations import PEOPLE_OPTION_DECLARATIONS, WORKSPACE_OPTION_DECLARATIONS

F = TypeVar("F", bound=Callable[..., Any])


class SpaceDid(click.ParamType):
    """A space is named by a DID (`did:` + method + `:` + id); anything else is a usage error."""

    name = "DID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from lib.fabric.identity import DID_FORM, is_did  # only when --space is given

        if not is_did(value):
            self.fail(f"{value!r} is not a DID ({DID_FORM})", param, ctx)
        return value


def _click_attributes(envvar: str | None, kind: str, help: str) -> dict[str, Any]:
    """click's attributes for a declared global option (cli/group_declarations.py)."""
    attrs: dict[str, Any] = {"help": help}
    if envvar is not None:
        attrs["envvar"] = envvar
    if kind == "count":
        attrs["count"] = True
    elif kind == "flag":
        attrs["is_flag"] = True
    elif kind == "file":
        attrs["type"] = click.Path(dir_okay=False)
    elif kind == "directory":
        attrs["type"] = click.Path(file_okay=False)
    elif kind == "did":
        attrs["type"] = SpaceDid()
    elif kind != "text":
        raise ValueError(f"unknown kind of option value {kind!r}")
    return attrs


# (declarations, attributes) of each option; the names are the Workspace's arguments.
WORKSPACE_OPTIONS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = tuple(
    (decls, _click_attributes(envvar, kind, help)) for decls, envvar, kind, help in WORKSPACE_OPTION_DECLARATIONS
)
PEOPLE_OPTIONS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = tuple(
    (decls, _click_attributes(envvar, kind, help)) for decls, envvar, kind, help in PEOPLE_OPTION_DECLARATIONS
)
GLOBAL_OPTIONS = WORKSPACE_OPTIONS + PEOPLE_OPTIONS
WORKSPACE_NAMES = tuple(decls[-1] for decls, _ in WORKSPACE_OPTIONS)
GLOBAL_NAMES = tuple(decls[-1] for decls, _ in GLOBAL_OPTIONS)


def global_options(function: F) -> F:
    """The global options as options of the group (its callback takes them)."""
    for decls, attrs in reversed(GLOBAL_OPTIONS):
        function = click.option(*decls, **attrs)(function)
    return function


def take_group_options(app: AppContext, values: dict[str, Any]) -> None:
    """What was given before the subcommand, or by the environment."""
    app.settings.update({name: values[name] for name in WORKSPACE_NAMES})
    app.verbose = values["verbose"]
    app.quiet = values["quiet"]


def with_global_options(command: click.Command) -> click.Command:
    """`command` with the global options after its name too: they are merged into the
    AppContext before its callback runs, and listed by its --help."""
    if getattr(command, "_global_options", False):
        return command
    if isinstance(command, click.Group):  # the options go after each subcommand's name
        for sub in command.commands.values():
            with_global_options(sub)
        return command
    command.params.extend(click.Option(decls, **attrs) for decls, attrs in GLOBAL_OPTIONS)
    callback = command.callback
    assert callback is not None

    @functools.wraps(callback)
    def merged(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name in GLOBAL_NAMES}
        ctx = click.get_current_context()
        app = ctx.ensure_object(AppContext)
        for name in WORKSPACE_NAMES:
            # only what was typed after the subcommand: the environment is the group's
            if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE:
                app.settings[name] = values[name]
        app.verbose += values["verbose"]
        app.quiet = app.quiet or values["quiet"]
        return callback(*args, **kwargs)

    command.callback = merged
    command._global_options = True  # type: ignore[attr-defined]
    return command

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

F = TypeVar("F", bound=Callable[..., Any])


class SpaceDid(click.ParamType):
    """A space is named by a DID (`did:` + method + `:` + id); anything else is a usage error."""

    name = "DID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from lib.fabric.identity import DID_FORM, is_did  # only when --space is given

        if not is_did(value):
            self.fail(f"{value!r} is not a DID ({DID_FORM})", param, ctx)
        return value


# (declarations, attributes) of each option; the names are the Workspace's arguments.
WORKSPACE_OPTIONS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("--config", "config_path"), dict(envvar="AGENTCTL_CONFIG", type=click.Path(dir_okay=False),
                                       help="Configuration file (default ~/.config/agentctl/config.toml).")),
    (("--store", "store_url"), dict(envvar="AGENTCTL_STORE",
                                    help="Store URL (default sqlite:///<state dir>/fabric.sqlite3).")),
    (("--space", "space"), dict(envvar="AGENTCTL_SPACE", type=SpaceDid(),
                                help="Space DID to publish into (default: your identity's DID).")),
    (("--identity", "identity_path"), dict(envvar="AGENTCTL_IDENTITY", type=click.Path(dir_okay=False),
                                           help="Ed25519 identity key file (default <state dir>/identity.json).")),
    (("--state-dir", "state_dir"), dict(envvar="AGENTCTL_STATE_DIR", type=click.Path(file_okay=False),
                                        help="State directory (default ~/.local/state/agentctl).")),
)
PEOPLE_OPTIONS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("-v", "--verbose", "verbose"), dict(count=True, help="More detail; tracebacks on errors.")),
    (("-q", "--quiet", "quiet"), dict(is_flag=True, help="No progress bars or messages.")),
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

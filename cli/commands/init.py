"""`agentctl init`: a first configuration file and the identity (lib/init_config.py)."""

from __future__ import annotations

import click

from cli.context import AppContext
from lib.init_config import initialize, next_steps
from lib.pipeline.records import JsonLinesSink


@click.command("init")
@click.option("--json", "as_json", is_flag=True, help="One `init` record (JSON) instead of text.")
@click.pass_obj
def init_command(app: AppContext, as_json) -> None:  # noqa: ANN001
    """Set agentctl up on this machine: your identity and a configuration file.

    Creates the identity (an Ed25519 key) if there is none, and writes a commented
    configuration file listing the sources found here: a Codex home ($CODEX_HOME or
    ~/.codex), a Claude configuration directory ($CLAUDE_CONFIG_DIR or ~/.claude), and
    ACP agent programs on PATH (written disabled: set enabled = true once you have
    checked them). Sources not found appear as commented-out examples.

    Running it again changes nothing: an existing configuration file and an existing
    identity are kept as they are (edit the file yourself; to start over, move it away).

    \b
    Example:
        agentctl init
        agentctl init --config ~/agentctl.toml --json
    """
    result = initialize(app.workspace)
    steps = next_steps(result)
    if as_json:
        JsonLinesSink().put({**result.record(), "next": [command for command, _ in steps]})
        return
    if result.config_created:
        click.echo(f"Wrote configuration {result.config_path}")
        found = [s for s in result.sources if s.found]
        for source in found:
            state = "enabled" if source.enabled else "disabled: set enabled = true once you have checked it"
            click.echo(f"  [sources.{source.id}] {source.driver} ({state})")
        if not found:
            click.echo("  no agent found on this machine: the file holds commented-out examples")
    else:
        click.echo(f"Configuration {result.config_path} exists; left as it is")
    if result.identity_created:
        click.echo(f"Created identity {result.identity_path} ({result.did})")
    else:
        click.echo(f"Identity {result.identity_path} exists; kept ({result.did})")
    click.echo("Next:")
    width = max(len(command) for command, _ in steps)
    for command, what in steps:
        click.echo(f"  {command.ljust(width)}  # {what}")

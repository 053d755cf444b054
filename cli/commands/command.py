"""`agentctl command ...`: send commands to agent sessions and run the executor.

The one-shot forms (`prompt`, `start`, `cancel`, `rename`, `set-mode`,
`set-config-option`) submit a command and print its terminal receipt, exiting by its
status; `submit` only queues one; `run` is the executor; `status` reads a receipt.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
from typing import Any

import click

from cli.context import AppContext
from cli.receipt_output import ReceiptPrinter, exit_by_status
from lib.command_submit import build_command, send_command, submit_command
from lib.commands import COMMAND_TYPES
from lib.errors import NotFoundError, UsageError
from lib.executor import Executor

PRODUCER = click.option("--producer", help="Use this configured producer's queue instead of your own.")
AS_JSON = click.option("--json", "as_json", is_flag=True, help="JSON lines even on a terminal.")


def _text(value: str) -> str:
    """TEXT, or standard input when TEXT is `-`."""
    return sys.stdin.read() if value == "-" else value


def _config_value(text: str) -> Any:
    """A config option value: JSON when it parses (true, 3, "x", {...}), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@click.group("command")
def command_group() -> None:
    """Send commands to agent sessions, and carry them out.

    \b
    Example:
        agentctl command prompt codex 019a2b... "Run the tests and fix what fails"
        agentctl command start codex "Write a README" --cwd ~/src/app
        agentctl command cancel codex 019a2b...
        agentctl command submit prompt codex 019a2b... --text "later"   # queue only
        agentctl command run --follow        # the executor, until Ctrl-C
        agentctl command status 6f1c...      # a command's receipt
    """


def _one_shot(app: AppContext, kind: str, source: str, session: str, payload: dict[str, Any],
              producer: str | None, as_json: bool, force: bool | None = None) -> None:
    workspace = app.workspace
    command = build_command(workspace, kind, source, session, payload, force=force)
    printer = ReceiptPrinter(as_json)
    app.say(f"agentctl: command {command.id} ({kind} {command.source_id} {command.native_session_id})")
    receipt = send_command(workspace, command, producer, on_wait=lambda m: app.say(f"agentctl: {m}"))
    if receipt is None:  # only a stop ends the wait without a receipt
        raise NotFoundError("no-receipt", f"no receipt for command {command.id} yet; see agentctl command status {command.id}")
    printer.print(receipt)
    exit_by_status(receipt)


@command_group.command("prompt")
@click.argument("source")
@click.argument("session")
@click.argument("text")
@click.option("--force", is_flag=True, default=None, help="Passed to the driver as the command's force flag.")
@PRODUCER
@AS_JSON
@click.pass_obj
def prompt_command(app: AppContext, source, session, text, force, producer, as_json) -> None:  # noqa: ANN001
    """Send TEXT to session SESSION of SOURCE and print its receipt (TEXT - reads stdin).

    Runs the prompt here when no executor is running, else hands it to the executor and
    waits; exits by the receipt's status (0 succeeded, 1 failed, 7 unknown...).

    \b
    Example:
        agentctl command prompt codex 019a2b3c-... "Run the tests and fix what fails"
        git diff | agentctl command prompt codex 019a2b3c-... -
    """
    _one_shot(app, "prompt", source, session, {"text": _text(text)}, producer, as_json, force)


@command_group.command("start")
@click.argument("source")
@click.argument("text")
@click.option("--session", help="The new session's id (default: a fresh UUID).")
@click.option("--cwd", help="The directory the session runs in.")
@click.option("--title", help="The session's title.")
@click.option("--mode", help="The mode of its first turn.")
@PRODUCER
@AS_JSON
@click.pass_obj
def start_command(app: AppContext, source, text, session, cwd, title, mode, producer, as_json) -> None:  # noqa: ANN001
    """Start a new session of SOURCE with TEXT as its first prompt.

    The receipt's result names the new session's id and directory.

    \b
    Example:
        agentctl command start codex "Write a README for this project" --cwd ~/src/app
    """
    payload = {"text": _text(text), "cwd": cwd, "title": title, "mode": mode}
    _one_shot(app, "start", source, session or str(uuid.uuid4()),
              {k: v for k, v in payload.items() if v is not None}, producer, as_json)


@command_group.command("cancel")
@click.argument("source")
@click.argument("session")
@PRODUCER
@AS_JSON
@click.pass_obj
def cancel_command(app: AppContext, source, session, producer, as_json) -> None:  # noqa: ANN001
    """Cancel the prompt agentctl is running in SESSION.

    \b
    Example:
        agentctl command cancel codex 019a2b3c-...
    """
    _one_shot(app, "cancel", source, session, {}, producer, as_json)


@command_group.command("rename")
@click.argument("source")
@click.argument("session")
@click.argument("title")
@PRODUCER
@AS_JSON
@click.pass_obj
def rename_command(app: AppContext, source, session, title, producer, as_json) -> None:  # noqa: ANN001
    """Rename SESSION to TITLE.

    \b
    Example:
        agentctl command rename codex 019a2b3c-... "Billing fixes"
    """
    _one_shot(app, "rename", source, session, {"title": title}, producer, as_json)


@command_group.command("set-mode")
@click.argument("source")
@click.argument("session")
@click.argument("mode")
@PRODUCER
@AS_JSON
@click.pass_obj
def set_mode_command(app: AppContext, source, session, mode, producer, as_json) -> None:  # noqa: ANN001
    """Switch SESSION to MODE (one of the modes the source advertises).

    \b
    Example:
        agentctl command set-mode work 7d1e... plan
    """
    _one_shot(app, "set-mode", source, session, {"mode": mode}, producer, as_json)


@command_group.command("set-config-option")
@click.argument("source")
@click.argument("session")
@click.argument("key")
@click.argument("value")
@PRODUCER
@AS_JSON
@click.pass_obj
def set_config_option_command(app: AppContext, source, session, key, value, producer, as_json) -> None:  # noqa: ANN001
    """Set configuration option KEY of SESSION to VALUE (JSON when it parses, else text).

    \b
    Example:
        agentctl command set-config-option work 7d1e... thinking true
    """
    _one_shot(app, "set-config-option", source, session, {"key": key, "value": _config_value(value)},
              producer, as_json)


@command_group.command("submit")
@click.argument("kind", metavar="TYPE", type=click.Choice(COMMAND_TYPES))
@click.argument("source")
@click.argument("session")
@click.option("--text", help="prompt/start: the text (- reads stdin).")
@click.option("--title", help="rename/start: the title.")
@click.option("--mode", help="set-mode/start: the mode.")
@click.option("--cwd", help="start: the directory.")
@click.option("--key", help="set-config-option: the option.")
@click.option("--value", help="set-config-option: its value (JSON when it parses, else text).")
@click.option("--payload", "payload_json", help="The whole payload as a JSON object (instead of the options).")
@click.option("--id", "command_id", help="The command id (default: a fresh UUID). Never reuse one.")
@click.option("--force", is_flag=True, default=None, help="The command's force flag.")
@PRODUCER
@click.pass_obj
def submit_command_cli(app: AppContext, kind, source, session, text, title, mode, cwd, key, value,  # noqa: ANN001
                       payload_json, command_id, force, producer) -> None:
    """Queue a command without waiting, and print its id.

    An executor (`agentctl command run`, `agentctl serve`) carries it out; `agentctl
    command status ID` shows its receipt.

    \b
    Example:
        agentctl command submit prompt codex 019a2b3c-... --text "Run the tests"
        agentctl command submit set-config-option work 7d1e... --key thinking --value true
    """
    if payload_json is not None:
        try:
            payload = json.loads(payload_json)
        except ValueError as exc:
            raise UsageError("bad-payload", f"--payload is not JSON ({exc}); give a JSON object") from None
    else:
        payload = {"text": _text(text) if text is not None else None, "title": title, "mode": mode,
                   "cwd": cwd, "key": key}
        payload = {k: v for k, v in payload.items() if v is not None}
        if value is not None:
            payload["value"] = _config_value(value)
    command = build_command(app.workspace, kind, source, session, payload, command_id=command_id, force=force)
    submit_command(app.workspace, command, producer)
    click.echo(command.id)


@command_group.command("run")
@click.option("--follow", is_flag=True, help="Keep running, carrying out commands as they arrive, until stopped.")
@AS_JSON
@click.pass_obj
def run_command(app: AppContext, follow, as_json) -> None:  # noqa: ANN001
    """Be the executor: recover what a stopped executor left, then carry out every
    queued command (once, or until Ctrl-C with --follow), printing each receipt.

    One executor runs per store and space: a second exits 4 naming the first.

    \b
    Example:
        agentctl command run --follow
    """
    printer = ReceiptPrinter(as_json)
    with Executor(app.workspace, on_receipt=printer.print) as executor:
        for receipt in executor.recover():
            printer.print(receipt)
        if follow:
            app.say("agentctl: carrying out commands as they arrive; Ctrl-C stops")
            executor.follow(threading.Event())
        else:
            executor.run_once()


@command_group.command("status")
@click.argument("command_id", metavar="ID")
@PRODUCER
@AS_JSON
@click.pass_obj
def status_command(app: AppContext, command_id, producer, as_json) -> None:  # noqa: ANN001
    """Print command ID's receipt; exit by its status (5 when there is none yet).

    \b
    Example:
        agentctl command status 6f1c0e2a-4b7d-4c1e-9a0b-1d2e3f405162 --json
    """
    workspace = app.workspace
    receipt = None
    if workspace.store_exists():
        receipt = workspace.open_target(read_only=True).read_receipt(command_id, producer)
    if receipt is None:
        raise NotFoundError("no-receipt", f"no receipt for command {command_id!r}; it has not been claimed by an "
                                          "executor yet (is one running? agentctl command run)")
    ReceiptPrinter(as_json).print(receipt)
    if receipt.terminal:
        exit_by_status(receipt)

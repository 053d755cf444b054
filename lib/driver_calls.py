"""A command's one provider call: the driver method its type names, with its payload.

`force` and the milestones in `options` reach only `prompt()` and `start_session()`, as
the spec says; every other type is a plain call.
"""

from __future__ import annotations

from lib.commands import AgentSessionCommand
from lib.drivers.base import AgentDriver
from lib.types import CommandExecutionOptions, CommandExecutionResult, PromptInput, StartInput


def call_driver(
    driver: AgentDriver, command: AgentSessionCommand, options: CommandExecutionOptions
) -> CommandExecutionResult:
    session, payload = command.native_session_id, command.payload
    match command.type:
        case "prompt":
            return driver.prompt(session, PromptInput(text=payload.text), options)  # type: ignore[union-attr]
        case "start":
            start = StartInput(text=payload.text, cwd=payload.cwd, title=payload.title,  # type: ignore[union-attr]
                               mode=payload.mode)  # type: ignore[union-attr]
            return driver.start_session(session, start, options)
        case "cancel":
            return driver.cancel(session)
        case "rename":
            return driver.rename_session(session, payload.title)  # type: ignore[union-attr]
        case "set-mode":
            return driver.set_mode(session, payload.mode)  # type: ignore[union-attr]
        case "set-config-option":
            return driver.set_config_option(session, payload.key, payload.value)  # type: ignore[union-attr]
    raise AssertionError(f"unhandled command type {command.type}")

"""What a Claude conversation runs with: the source's modes and options, the directory a
start runs in, and the `ClaudeAgentOptions` fields of one conversation.

A conversation's environment is its own: the source's `env` plus `CLAUDE_CONFIG_DIR`,
handed to the SDK as `ClaudeAgentOptions.env` (merged over a copy of ours for the CLI
child only); our process's environment never changes for a prompt.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from lib.drivers.claude_sdk_adapter import CONFIG_DIR_VARIABLE
from lib.types import AgentSourceConfig, CommandExecutionResult

# Claude Code's permission modes this driver accepts; bypassPermissions only with
# allowDangerFullAccess. (`auto` is left out: not checked against the pinned CLI.)
MODES = ("acceptEdits", "default", "dontAsk", "plan")
BYPASS = "bypassPermissions"
MODEL_OPTION = "model"
CONFIG_OPTIONS = {
    MODEL_OPTION: {"id": MODEL_OPTION, "name": "Model", "type": "string",
                   "description": "The Claude model of this driver's later prompts on the session "
                                  "(a name or alias the Claude Code CLI accepts)"},
}
# Claude Code's own system prompt, as a Claude Code session has it (the SDK's default is empty).
SYSTEM_PROMPT = {"type": "preset", "preset": "claude_code"}


def config_dir_of(config: AgentSourceConfig) -> str | None:
    """`configDir`, else a `CLAUDE_CONFIG_DIR` in the source's `env`, else None (the SDK's
    default)."""
    return config.config_dir or config.env.get(CONFIG_DIR_VARIABLE) or None


def modes_of(config: AgentSourceConfig) -> list[str]:
    return sorted([*MODES, BYPASS] if config.allow_danger_full_access else MODES)


def unsupported_mode(source_id: str, mode: str, modes: list[str]) -> CommandExecutionResult:
    return CommandExecutionResult.failure(
        "unsupported", "unsupported-mode", f"source {source_id} has no mode {mode!r}; it has: {', '.join(modes)}")


def refused_option(source_id: str, key: str, value: Any) -> CommandExecutionResult | None:
    """Why `set_config_option(key, value)` is refused (None: it is not): the model is the
    only option, a non-empty string or null for Claude's default."""
    if key != MODEL_OPTION:
        return CommandExecutionResult.failure(
            "unsupported", "unsupported-option", f"source {source_id} has no option {key!r}; it has: {MODEL_OPTION}")
    if value is not None and (not isinstance(value, str) or not value.strip()):
        return CommandExecutionResult.failure(
            "failed", "invalid-value", "the model must be a non-empty string (or null for Claude's default)")
    return None


def is_uuid(text: str) -> bool:
    """A UUID in its canonical lowercase form (Claude names session files by it)."""
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def start_directory(config: AgentSourceConfig, source_id: str, named: str | None) -> str | CommandExecutionResult:
    """Where a start runs: the source's cwd (any other named directory fails), else the
    named one, required and made absolute; it must be an existing directory."""
    configured = config.cwd
    if configured is not None:
        if named is not None and os.path.realpath(os.path.abspath(named)) != os.path.realpath(configured):
            return CommandExecutionResult.failure(
                "failed", "wrong-directory", f"source {source_id} starts sessions in {configured} only, not in {named}")
        directory = configured
    elif named is None:
        return CommandExecutionResult.failure(
            "failed", "cwd-required", f"source {source_id} has no cwd: the start must name its directory")
    else:
        directory = os.path.abspath(os.path.expanduser(named))
    if not os.path.isdir(directory):
        return CommandExecutionResult.failure("failed", "no-such-directory", f"{directory} is not a directory")
    return directory


def conversation_fields(config: AgentSourceConfig, directory: str, *, mode: str | None,
                        model: str | None) -> dict[str, Any]:
    """The `ClaudeAgentOptions` fields of one conversation: its environment, directory,
    system prompt, mode, model and (from the source's `command`) CLI."""
    env = dict(config.env)
    config_dir = config_dir_of(config)
    if config_dir is not None:
        env[CONFIG_DIR_VARIABLE] = config_dir
    if mode == BYPASS and hasattr(os, "geteuid") and os.geteuid() == 0:
        # The CLI refuses to skip permissions as root unless told it runs in a sandbox.
        env.setdefault("IS_SANDBOX", "1")
    fields: dict[str, Any] = {"cwd": directory, "env": env, "system_prompt": SYSTEM_PROMPT}
    if mode is not None:
        fields["permission_mode"] = mode
    if model is not None:
        fields["model"] = model
    if config.command:
        fields["cli_path"] = config.command[0]
    return fields

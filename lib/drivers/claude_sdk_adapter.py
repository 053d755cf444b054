"""`ClaudeSdkAdapter`: the Claude Agent SDK operations the Claude driver uses, and nothing else.

The session functions (`list_sessions`, `get_session_info`, `get_session_messages`,
`rename_session`) are synchronous filesystem work that read `CLAUDE_CONFIG_DIR` from
`os.environ` at call time and take no environment argument, so the adapter sets that one
variable for the length of one call, under one process-wide lock, and puts back what was
there (the spec's "short serialized environment change", for these calls only;
environment_switch.py).

Prompts never touch our environment: `client(options)` makes a `ClaudeSDKClient` whose
`ClaudeAgentOptions.env` carries the source's values (the SDK merges them over a copy of
the environment for the CLI child only), so prompts of different sources run at once.
The spec names `query()`; the Python SDK's `query()` cannot be interrupted (research
notes §4), so a prompt is one `ClaudeSDKClient` conversation: connect, one query, its
messages up to the result, disconnect. That is the same CLI run `query()` makes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from lib.drivers.base import DriverError, DriverUnavailable
from lib.drivers.child_channels import report_provider_output
from lib.drivers.environment_switch import VariableSwitch

CONFIG_DIR_VARIABLE = "CLAUDE_CONFIG_DIR"

_T = TypeVar("_T")


def provider_call(source_id: str, name: str, call: Callable[[], _T]) -> _T:
    """One SDK call of source `source_id`'s driver; anything it raises becomes a
    DriverError naming the call and the source (the SDK's own words are the detail, not
    the message: they can quote file content)."""
    try:
        return call()
    except DriverError:
        raise
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}"
        report_provider_output(f"the Claude Agent SDK's {name} (source {source_id})", detail)
        raise DriverError(
            "provider-error",
            f"the Claude Agent SDK's {name} failed for source {source_id} ({type(exc).__name__})",
            detail=detail,
        ) from None


class ClaudeSdkAdapter:
    """The SDK operations the driver uses, each given the source's configuration directory.

    `config_dir` None means the SDK's own default (this process's `CLAUDE_CONFIG_DIR`,
    else `~/.claude`). The SDK is imported when the adapter is made: it is large (it
    bundles the Claude Code CLI) and only Claude sources need it.
    """

    def __init__(self, config_dir: str | None) -> None:
        try:
            import claude_agent_sdk
            from claude_agent_sdk._cli_version import __cli_version__
        except ImportError as exc:
            raise DriverUnavailable(
                "sdk-not-installed",
                f"the Claude Agent SDK (Python package claude-agent-sdk) cannot be imported: {exc}",
            ) from None
        self._sdk = claude_agent_sdk
        self.config_dir = config_dir
        self._switch = VariableSwitch(CONFIG_DIR_VARIABLE, config_dir) if config_dir is not None else None
        self.cli_version: str | None = __cli_version__

    def _call(self, function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        if self._switch is None:
            return function(*args, **kwargs)
        return self._switch.call(function, *args, **kwargs)

    # -- session functions (synchronous) ---------------------------------------------

    def list_sessions(self, *, limit: int | None, offset: int, directory: str | None) -> list[Any]:
        return self._call(self._sdk.list_sessions, directory=directory, limit=limit, offset=offset,
                          include_worktrees=True)

    def get_session_info(self, session_id: str, directory: str | None) -> Any | None:
        return self._call(self._sdk.get_session_info, session_id, directory=directory)

    def get_session_messages(self, session_id: str, directory: str | None) -> list[Any]:
        # The Python SDK has no includeSystemMessages: it returns the user and assistant
        # messages of the conversation chain only.
        return self._call(self._sdk.get_session_messages, session_id, directory=directory)

    def rename_session(self, session_id: str, title: str, directory: str | None) -> None:
        self._call(self._sdk.rename_session, session_id, title, directory=directory)

    # -- prompts (asynchronous, on the driver's private loop) ---------------------------

    def options(self, **fields: Any) -> Any:
        """A `ClaudeAgentOptions` with these fields."""
        return self._sdk.ClaudeAgentOptions(**fields)

    def client(self, options: Any) -> Any:
        """A `ClaudeSDKClient` (not connected) for one prompt."""
        return self._sdk.ClaudeSDKClient(options)

    def is_result(self, message: Any) -> bool:
        return isinstance(message, self._sdk.ResultMessage)

    def is_system(self, message: Any) -> bool:
        return isinstance(message, self._sdk.SystemMessage)

    @property
    def cli_not_found(self) -> type[BaseException]:
        return self._sdk.CLINotFoundError

"""One ACP agent process and the SDK connection to it, on the driver's event loop.

`AgentConnection.open()` spawns the agent (`acp_process`), joins the SDK's
`ClientSideConnection` to it through `AgentStream`, and initializes with the SDK's
current protocol version, the client name `commonfabric-agents-connector`, and the one
client capability the driver uses: boolean configuration options. `call()` runs one SDK
request and turns what can go wrong into a `DriverError` with a stable code:

| what happened | code |
| --- | --- |
| the agent answered with a JSON-RPC error | `provider-error` (`AgentRequestFailed`, with the JSON-RPC code) |
| the agent answered with a result of the wrong shape | `provider-protocol-error` |
| the agent sent a line that is no message, or a line too long | `provider-protocol-error`, `line-too-long` |
| the agent exited, or the driver stopped | `agent-exited`, `driver-stopped` (`ConnectionLost`) |

Whatever the agent wrote itself (stderr, a garbage line) is only ever an error's `detail`.
The client answers every `session/request_permission` with the cancelled outcome: the
connector has no one to ask.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from pydantic import ValidationError

from lib.drivers.acp_process import AgentProcess
from lib.drivers.acp_stream import AgentStream
from lib.drivers.base import DriverError

CLIENT_NAME = "commonfabric-agents-connector"
_T = TypeVar("_T")


class AgentRequestFailed(DriverError):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, message: str, rpc_code: int) -> None:
        super().__init__("provider-error", message)
        self.rpc_code = rpc_code


class ConnectionLost(DriverError):
    """The connection ended before the answer (the agent exited, sent garbage, or the
    driver stopped)."""


class PermissionDenier:
    """The SDK client: permission requests are answered cancelled; nothing else is
    handled here (`session/update` never reaches the SDK, see `acp_stream`)."""

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **meta: Any) -> Any:
        from acp.schema import DeniedOutcome, RequestPermissionResponse

        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def session_update(self, session_id: str, update: Any, **meta: Any) -> None:
        return None


class AgentConnection:
    def __init__(self, name: str, *, on_update: Callable[[str, dict[str, Any]], None],
                 on_sent: Callable[[dict[str, Any]], None],
                 on_answered: Callable[[str, str | None], None] | None = None) -> None:
        self.name = name  # "acp (source ID)"
        self.process = AgentProcess(name)
        self._on_update = on_update
        self._on_sent = on_sent
        self._on_answered = on_answered
        self.stream: AgentStream | None = None
        self.conn: Any = None
        self.closed = asyncio.Event()  # the connection ended, for whatever reason
        self.lost: ConnectionLost | None = None
        self._stopping = False
        self._watcher: asyncio.Task[None] | None = None

    async def open(self, argv: Sequence[str], env: dict[str, str], cwd: str | None, line_limit: int,
                   version: str) -> Any:
        """Spawn, connect and initialize; the InitializeResponse."""
        from acp import PROTOCOL_VERSION, connect_to_agent
        from acp.schema import (
            BooleanConfigOptionCapabilities,
            ClientCapabilities,
            ClientSessionCapabilities,
            Implementation,
            SessionConfigOptionsCapabilities,
        )

        reader, writer = await self.process.spawn(argv, env, cwd, line_limit)
        self.stream = AgentStream(self.name, reader, writer, on_update=self._on_update, on_sent=self._on_sent,
                                  on_answered=self._on_answered)
        self.conn = connect_to_agent(PermissionDenier(), self.stream)
        self._watcher = asyncio.get_running_loop().create_task(self._watch_exit())
        capabilities = ClientCapabilities(session=ClientSessionCapabilities(
            config_options=SessionConfigOptionsCapabilities(boolean=BooleanConfigOptionCapabilities())))
        return await self.call(lambda conn: conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities,
            client_info=Implementation(name=CLIENT_NAME, title="agentctl", version=version)))

    async def call(self, request: Callable[[Any], Awaitable[_T]]) -> _T:
        """One SDK request; its failures as DriverErrors (see the table above)."""
        from acp import RequestError

        if self.lost is not None:
            raise self.lost
        try:
            return await request(self.conn)
        except RequestError as exc:
            raise AgentRequestFailed(f"{self.name} answered with error {exc.code}: {exc}", exc.code) from None
        except ValidationError:
            raise DriverError("provider-protocol-error",
                              f"{self.name} answered with a result that is not what ACP says") from None
        except (ConnectionError, OSError):
            # The stream ended (the agent exited, sent garbage, or was stopped): the
            # agent goes with it, and its exit watcher says why.
            await self.process.end()
            await self.closed.wait()
            assert self.lost is not None
            raise self.lost from None

    async def _watch_exit(self) -> None:
        """The connection's end: the agent exited (or a fault or a stop ended it)."""
        code = await self.process.exited()
        stream = self.stream
        if self._stopping:
            lost = ConnectionLost("driver-stopped", f"{self.name} was stopped")
        elif stream is not None and stream.fault is not None:
            lost = ConnectionLost(stream.fault.code, stream.fault.message, detail=stream.fault.detail)
        else:
            detail = self.process.detail()
            hint = "; agentctl -v shows what it wrote" if detail else ""
            lost = ConnectionLost("agent-exited", f"{self.name} exited with code {code}{hint}", detail=detail)
        self.lost = lost
        await self._close_connection()
        self.closed.set()

    async def close(self) -> None:
        """The driver's stop: every pending call fails with `driver-stopped`."""
        self._stopping = True
        if self.process.process is None:
            return
        await self.process.end()
        await self.closed.wait()

    async def _close_connection(self) -> None:
        if self.conn is not None:
            try:
                await self.conn.close()
            except Exception:  # noqa: BLE001 - closing what already ended
                pass

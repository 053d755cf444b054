"""The newline-delimited JSON stream between the ACP SDK's connection and the agent.

`AgentStream` is a message-level transport of the SDK (`acp.connect_to_agent(client,
stream)`): the SDK's `ClientSideConnection` sends requests and matches responses through
it, as over its own stdio transport, with three differences that make the driver's
guarantees hold:

* Every `session/update` notification goes to `on_update` here, synchronously, in the
  order the agent wrote it and before any later line is read. So by the time the SDK
  hands back the response to `session/load`, every update the agent sent before that
  response is recorded; nothing waits on a handler task. The notification is not passed
  on: the SDK would parse it into its types, drop kinds it does not know, and log
  tracebacks for ones it cannot parse. Other notifications are ignored.
* A line that is no JSON-RPC message, or a line longer than the source's `maxLineBytes`,
  ends the stream with a `provider-protocol-error` or `line-too-long` fault (the SDK
  would log it and wait on for an answer that never comes). Ending the stream fails every
  pending call.
* `on_sent` sees every message once it is written, which is how a prompt knows it has
  started.
* `on_answered(method, session_id)` is told, synchronously and in wire order, when the
  answer to a request we sent arrives: before any later line is read. The SDK's caller
  resumes only some loop turns later, by when the agent's next lines (codex-acp sends
  `available_commands_update` right after a load's answer) may have been read and
  recorded; so a load's recording ends here, at its answer, not when its caller resumes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from lib.drivers.base import DriverError

GARBAGE_DETAIL_BYTES = 200


class AgentStream:
    def __init__(
        self,
        name: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        on_update: Callable[[str, dict[str, Any]], None],
        on_sent: Callable[[dict[str, Any]], None] | None = None,
        on_answered: Callable[[str, str | None], None] | None = None,
    ) -> None:
        self._name = name
        self._reader = reader
        self._writer = writer
        self._on_update = on_update
        self._on_sent = on_sent
        self._on_answered = on_answered
        self._asked: dict[Any, tuple[str, str | None]] = {}  # request id -> (method, sessionId)
        self._write_lock = asyncio.Lock()
        self.fault: DriverError | None = None  # why the stream ended early, if it did

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
        if self._on_answered is not None and "method" in message and "id" in message:
            params = message.get("params")
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            self._asked[message["id"]] = (message["method"], session_id)  # before it can be answered
        async with self._write_lock:
            self._writer.write(data)
            await self._writer.drain()
        if self._on_sent is not None:
            self._on_sent(message)

    async def receive(self) -> dict[str, Any] | None:
        """The next message the SDK must see; None at the end (EOF or a fault)."""
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                line = exc.partial  # the last line, without its newline; b"" at EOF
                if not line.strip():
                    return None
            except asyncio.LimitOverrunError:
                return self._fail("line-too-long", "sent a line longer than maxLineBytes", None)
            except (ConnectionError, OSError):
                return None
            text = line.strip()
            if not text:
                continue
            message = self._message(text)
            if message is None:
                return None
            if "method" in message and "id" not in message:
                self._notification(message)
                if self.fault is not None:
                    return None
                continue
            if "method" not in message:
                asked = self._asked.pop(message.get("id"), None)
                if asked is not None and self._on_answered is not None:
                    self._on_answered(*asked)
            return message

    def _message(self, text: bytes) -> dict[str, Any] | None:
        try:
            message = json.loads(text)
        except ValueError:
            return self._fail("provider-protocol-error", "sent a line that is no JSON", text)
        if not isinstance(message, dict):
            return self._fail("provider-protocol-error", "sent JSON that is no JSON-RPC message", text)
        method = message.get("method")
        ident = message.get("id")
        if method is not None and not isinstance(method, str):
            return self._fail("provider-protocol-error", "sent a message whose method is no string", text)
        if "id" in message and (isinstance(ident, bool) or not isinstance(ident, int | str | None)):
            return self._fail("provider-protocol-error", "sent a message whose id is no number or string", text)
        if method is None:
            if "id" not in message:
                return self._fail("provider-protocol-error", "sent JSON that is no JSON-RPC message", text)
            if "error" in message and not isinstance(message["error"], dict):
                return self._fail("provider-protocol-error", "answered with an error that is no object", text)
        return message

    def _notification(self, message: dict[str, Any]) -> None:
        if message["method"] != "session/update":
            return  # nothing else an agent notifies is ours to act on
        params = message.get("params")
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        update = params.get("update") if isinstance(params, dict) else None
        if not isinstance(session_id, str) or not isinstance(update, dict):
            self._fail("provider-protocol-error", "sent a session/update without a session id and update",
                       json.dumps(message).encode())
            return
        self._on_update(session_id, update)

    def _fail(self, code: str, what: str, text: bytes | None) -> None:
        if self.fault is None:
            detail = text[:GARBAGE_DETAIL_BYTES].decode("utf-8", "replace") if text else None
            self.fault = DriverError(code, f"{self._name} {what}; agentctl stopped it", detail=detail)
        return None

    async def close(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()

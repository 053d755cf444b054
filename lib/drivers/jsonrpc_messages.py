"""JSON-RPC 2.0 messages as the transport sees them: parsing a received message,
telling requests, notifications and responses apart, and the two ways a call fails."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lib.drivers.base import DriverError

Message = dict[str, Any]

__all__ = ["Message", "RpcError", "TransportClosed", "classify_message", "parse_message", "predicate_matches"]


class TransportClosed(DriverError):
    """The run ended (child exit, protocol fault, stop) before an answer came.

    `sent` tells whether the request had been written to the child: a request that was
    sent may have taken effect, one that was not certainly did not.
    """

    def __init__(self, code: str, message: str, *, sent: bool = False, detail: str | None = None) -> None:
        super().__init__(code, message, retryable=True, detail=detail)
        self.sent = sent

    def again(self, *, sent: bool = False) -> TransportClosed:
        """The same failure for another call (whose request was or was not `sent`)."""
        return TransportClosed(self.code, self.message, sent=sent, detail=self.detail)


class RpcError(DriverError):
    """The child answered a request with a JSON-RPC error."""

    def __init__(self, rpc_code: int | None, message: str, data: Any = None) -> None:
        super().__init__("provider-error", message)
        self.rpc_code = rpc_code
        self.data = data


def parse_message(raw: bytes) -> Message | None:
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def classify_message(message: Message | None) -> str | None:
    if message is None:
        return None
    version = message.get("jsonrpc")
    if version is not None and version != "2.0":
        return None
    has_id = "id" in message and isinstance(message["id"], (int, str)) and not isinstance(message["id"], bool)
    method = message.get("method")
    if method is not None:
        if not isinstance(method, str):
            return None
        return "request" if has_id else "notification"
    if has_id and ("result" in message or "error" in message):
        return "response"
    return None


def predicate_matches(predicate: Callable[[Message], bool] | None, message: Message) -> bool:
    try:
        return predicate is not None and bool(predicate(message))
    except Exception:  # noqa: BLE001 - a predicate that cannot read a message does not match it
        return False

"""Client-side WebSocket (RFC 6455) over a pair of byte streams, on `wsproto`.

`codex app-server proxy` relays the daemon's control socket, which speaks WebSocket, over
its own stdin and stdout. So in `managed` and `proxy` modes each JSON-RPC message travels
as one text frame over the child's pipes. wsproto does the protocol: the upgrade request
and its `101` / `Sec-WebSocket-Accept` check, masked client frames, reassembly of
fragmented server messages, validation. This module moves its bytes over the pipes,
answers pings and the peer's close, and raises `WebSocketError` for a refused upgrade or
a broken protocol, and `LineTooLong` for a message longer than `max_message_bytes` (wsproto
hands data frames over in pieces as they arrive, so no more than that is held).
"""

from __future__ import annotations

import collections
import io
import threading

from wsproto import ConnectionType, WSConnection, events
from wsproto.connection import ConnectionState
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from lib.drivers.child_output import LineTooLong, WebSocketError

_READ_SIZE = 65536
# wsproto reports a frame it cannot parse as a CloseConnection event without leaving these
# states; a close frame the peer really sent moves it to REMOTE_CLOSING or CLOSED.
_NOT_CLOSED_BY_PEER = (ConnectionState.OPEN, ConnectionState.LOCAL_CLOSING)


class WebSocketPipe:
    """A WebSocket client over `reader` (the peer's output) and `writer` (its input).

    `receive()` is for one reader thread; `send()` may be called from any thread.
    """

    def __init__(self, reader: io.BufferedIOBase, writer: io.BufferedIOBase, *,
                 host: str = "localhost", path: str = "/", max_message_bytes: int | None = None):
        self._reader, self._writer = reader, writer
        self._max_message_bytes = max_message_bytes
        self._host, self._path = host, path
        self._ws = WSConnection(ConnectionType.CLIENT)
        self._pending: collections.deque[events.Event | WebSocketError] = collections.deque()
        self._state_lock = threading.Lock()  # wsproto's state; never held across I/O
        self._write_lock = threading.Lock()  # whole frames, in the order wsproto made them

    def handshake(self) -> None:
        """Send the upgrade request and check the `101 Switching Protocols` answer."""
        self._send(events.Request(host=self._host, target=self._path))
        while True:
            while self._pending:
                event = self._pending.popleft()
                if isinstance(event, events.AcceptConnection):
                    return
                if isinstance(event, events.RejectConnection):
                    raise WebSocketError(f"WebSocket upgrade refused (HTTP status {event.status_code})")
            if not self._pump():
                raise WebSocketError("the peer closed the stream before answering the WebSocket upgrade")

    def send(self, text: str) -> None:
        self._send(events.TextMessage(data=text))

    def receive(self) -> bytes | None:
        """The next whole data message, or None once the peer closed the connection."""
        parts: list[bytes] = []
        size = 0
        while True:
            while self._pending:
                event = self._pending.popleft()
                if isinstance(event, WebSocketError):
                    raise event
                if isinstance(event, events.Message):
                    data = event.data
                    parts.append(data.encode("utf-8") if isinstance(data, str) else bytes(data))
                    size += len(parts[-1])
                    if self._max_message_bytes is not None and size > self._max_message_bytes:
                        parts.clear()
                        raise LineTooLong(self._max_message_bytes)
                    if event.message_finished:
                        return b"".join(parts)
                elif isinstance(event, events.Ping):
                    self._send(event.response())
                elif isinstance(event, events.CloseConnection):
                    self._send_quietly(event.response())
                    return None
            if not self._pump():
                if parts:
                    raise WebSocketError("the stream ended in the middle of a fragmented message")
                return None

    def close(self, code: int = 1000) -> None:
        """Send a close frame (best effort: the peer may already be gone)."""
        self._send_quietly(events.CloseConnection(code=code))

    def _pump(self) -> bool:
        """Feed what the peer sent next to wsproto; False at the end of the stream (or after
        the close handshake, when nothing more may be read)."""
        data = b"" if self._ws.state is ConnectionState.CLOSED else self._reader.read1(_READ_SIZE)
        if not data:
            return False
        with self._state_lock:
            try:
                self._ws.receive_data(data)
            except RemoteProtocolError as exc:
                raise WebSocketError(f"WebSocket upgrade answer is not valid: {exc}") from None
            for event in self._ws.events():
                if isinstance(event, events.CloseConnection) and self._ws.state in _NOT_CLOSED_BY_PEER:
                    self._pending.append(WebSocketError(f"{event.reason} (close code {int(event.code)})"))
                else:
                    self._pending.append(event)
        return True

    def _send(self, event: events.Event) -> None:
        with self._write_lock:
            with self._state_lock:
                try:
                    data = self._ws.send(event)
                except LocalProtocolError:
                    raise WebSocketError("the WebSocket connection is closed") from None
            self._writer.write(data)
            self._writer.flush()

    def _send_quietly(self, event: events.Event) -> None:
        try:
            self._send(event)
        except (OSError, ValueError, WebSocketError):
            pass

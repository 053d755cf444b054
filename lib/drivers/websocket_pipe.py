"""Client-side WebSocket framing (RFC 6455) over a pair of byte streams.

`codex app-server proxy` relays the daemon's control socket, which speaks WebSocket, over
its own stdin and stdout. So in `managed` and `proxy` modes each JSON-RPC message travels
as one text frame over the child's pipes. This module does only what that needs: the
upgrade request, masked client text frames, unmasked server frames with continuation,
ping/pong and close. Stdlib only.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
import threading
from typing import BinaryIO

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONTINUATION, OP_TEXT, OP_BINARY = 0x0, 0x1, 0x2
OP_CLOSE, OP_PING, OP_PONG = 0x8, 0x9, 0xA


class WebSocketError(Exception):
    """The peer broke the WebSocket protocol or refused the upgrade."""


def accept_key(key: str) -> str:
    """The Sec-WebSocket-Accept value a server must answer `key` with."""
    return base64.b64encode(hashlib.sha1(key.encode("ascii") + _GUID).digest()).decode("ascii")


def encode_frame(opcode: int, payload: bytes, *, mask: bytes | None = None, fin: bool = True) -> bytes:
    """One frame; a client masks every frame it sends (`mask` given), a server does not."""
    head = bytearray([(0x80 if fin else 0) | opcode])
    mask_bit = 0x80 if mask is not None else 0
    length = len(payload)
    if length < 126:
        head.append(mask_bit | length)
    elif length < 1 << 16:
        head.append(mask_bit | 126)
        head += struct.pack(">H", length)
    else:
        head.append(mask_bit | 127)
        head += struct.pack(">Q", length)
    if mask is None:
        return bytes(head) + payload
    return bytes(head) + mask + _apply_mask(payload, mask)


def _apply_mask(payload: bytes, mask: bytes) -> bytes:
    # XOR with the 4-byte key repeated; done on big integers, which is fast for large payloads.
    if not payload:
        return payload
    key = (mask * (len(payload) // 4 + 1))[: len(payload)]
    masked = int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")
    return masked.to_bytes(len(payload), "big")


class WebSocketPipe:
    """A WebSocket client over `reader` (the peer's output) and `writer` (its input).

    `receive()` is for one reader thread; `send()` may be called from any thread.
    """

    def __init__(self, reader: BinaryIO, writer: BinaryIO, *, host: str = "localhost", path: str = "/"):
        self._reader = reader
        self._writer = writer
        self._host = host
        self._path = path
        self._write_lock = threading.Lock()
        self._closed = False

    def handshake(self) -> None:
        """Send the upgrade request and check the `101 Switching Protocols` answer."""
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        request = (
            f"GET {self._path} HTTP/1.1\r\n"
            f"Host: {self._host}\r\n"
            "Upgrade: websocket\r\n"
            "Connection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        )
        self._write(request.encode("ascii"))
        status = self._reader.readline()
        if not status:
            raise WebSocketError("the peer closed the stream before answering the WebSocket upgrade")
        headers: dict[str, str] = {}
        while True:
            line = self._reader.readline()
            if not line:
                raise WebSocketError("the peer closed the stream in the middle of the upgrade answer")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        parts = status.decode("latin-1").split(" ", 2)
        if len(parts) < 2 or parts[1] != "101":
            raise WebSocketError(f"WebSocket upgrade refused: {status.decode('latin-1').strip()!r}")
        if headers.get("sec-websocket-accept") != accept_key(key):
            raise WebSocketError("WebSocket upgrade answer has a wrong Sec-WebSocket-Accept")

    def send(self, text: str) -> None:
        self._send_frame(OP_TEXT, text.encode("utf-8"))

    def receive(self) -> bytes | None:
        """The next whole data message, or None once the peer closed the connection."""
        message = bytearray()
        in_message = False
        while True:
            frame = self._read_frame()
            if frame is None:
                if in_message:
                    raise WebSocketError("the stream ended in the middle of a fragmented message")
                return None
            fin, opcode, payload = frame
            if opcode == OP_PING:
                self._send_frame(OP_PONG, payload)
            elif opcode == OP_PONG:
                continue
            elif opcode == OP_CLOSE:
                self._answer_close(payload)
                return None
            elif opcode in (OP_TEXT, OP_BINARY):
                if in_message:
                    raise WebSocketError("a new message began before the previous one finished")
                message += payload
                in_message = True
                if fin:
                    return bytes(message)
            elif opcode == OP_CONTINUATION:
                if not in_message:
                    raise WebSocketError("a continuation frame arrived outside a message")
                message += payload
                if fin:
                    return bytes(message)
            else:
                raise WebSocketError(f"unknown WebSocket opcode {opcode:#x}")

    def close(self, code: int = 1000) -> None:
        """Send a close frame (best effort: the peer may already be gone)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._send_frame(OP_CLOSE, struct.pack(">H", code), force=True)
        except (OSError, ValueError):
            pass

    def _answer_close(self, payload: bytes) -> None:
        if not self._closed:
            self._closed = True
            try:
                self._send_frame(OP_CLOSE, payload[:2], force=True)
            except (OSError, ValueError):
                pass

    def _read_exact(self, count: int) -> bytes | None:
        data = self._reader.read(count) if count else b""
        if count and not data:
            return None
        if len(data) != count:
            raise WebSocketError("the stream ended in the middle of a WebSocket frame")
        return data

    def _read_frame(self) -> tuple[bool, int, bytes] | None:
        head = self._read_exact(2)
        if head is None:
            return None
        fin, opcode = bool(head[0] & 0x80), head[0] & 0x0F
        if head[0] & 0x70:
            raise WebSocketError("a WebSocket frame uses reserved bits (no extension was agreed)")
        if head[1] & 0x80:
            raise WebSocketError("the server sent a masked WebSocket frame")
        length = head[1] & 0x7F
        if length == 126:
            length = struct.unpack(">H", self._need(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", self._need(8))[0]
        if opcode >= 0x8 and (length > 125 or not fin):
            raise WebSocketError("a WebSocket control frame is fragmented or too long")
        payload = self._need(length) if length else b""
        return fin, opcode, payload

    def _need(self, count: int) -> bytes:
        data = self._read_exact(count)
        if data is None:
            raise WebSocketError("the stream ended in the middle of a WebSocket frame")
        return data

    def _send_frame(self, opcode: int, payload: bytes, *, force: bool = False) -> None:
        if self._closed and not force:
            raise WebSocketError("the WebSocket connection is closed")
        self._write(encode_frame(opcode, payload, mask=os.urandom(4)))

    def _write(self, data: bytes) -> None:
        with self._write_lock:
            self._writer.write(data)
            self._writer.flush()

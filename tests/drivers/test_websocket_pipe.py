"""WebSocketPipe against a scripted server on real pipes.

The server end is written by hand here (frames built and read byte by byte), so these
tests check the wire format itself: the upgrade request, masked client frames, the length
forms, fragmentation, ping/pong, the close handshake and every protocol fault the client
must refuse.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from concurrent.futures import ThreadPoolExecutor

import pytest

from lib.drivers.websocket_pipe import WebSocketError, WebSocketPipe

pytestmark = pytest.mark.timeout(30)

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TEXT, BINARY, CONTINUATION, CLOSE, PING, PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA


def frame(opcode: int, payload: bytes = b"", *, fin: bool = True, rsv: int = 0,
          mask: bytes | None = None) -> bytes:
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    mask_bit = 0x80 if mask else 0
    length = len(payload)
    if length < 126:
        head += bytes([mask_bit | length])
    elif length < 1 << 16:
        head += bytes([mask_bit | 126]) + struct.pack(">H", length)
    else:
        head += bytes([mask_bit | 127]) + struct.pack(">Q", length)
    if mask:
        head += mask
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + payload


class Peer:
    """The server end of a WebSocketPipe, over two real pipes.

    It writes on a thread of its own, in order, so a write larger than a pipe holds
    never waits for the client to read.
    """

    def __init__(self) -> None:
        self.writer = ThreadPoolExecutor(1)
        to_client, from_server = os.pipe()
        to_server, from_client = os.pipe()
        self.inp, self.out = open(to_server, "rb"), open(from_server, "wb")
        self.client_streams = (open(to_client, "rb"), open(from_client, "wb"))
        self.pipe = WebSocketPipe(*self.client_streams)
        self.request_line = b""
        self.headers: dict[str, str] = {}

    def read_request(self) -> None:
        self.request_line = self.inp.readline()
        while (line := self.inp.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            self.headers[name.strip().lower()] = value.strip()

    def answer(self, *, status: bytes = b"101 Switching Protocols", accept: str | None = None,
               then: bytes = b"") -> None:
        if accept is None:
            key = self.headers["sec-websocket-key"].encode()
            accept = base64.b64encode(hashlib.sha1(key + GUID).digest()).decode()
        self.write(b"HTTP/1.1 " + status + b"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   b"Sec-WebSocket-Accept: " + accept.encode() + b"\r\n\r\n" + then)

    def write(self, data: bytes) -> None:
        self.writer.submit(self._write, data)

    def _write(self, data: bytes) -> None:
        self.out.write(data)
        self.out.flush()

    def end(self) -> None:
        self.writer.submit(self.out.close)

    def read_frame(self) -> tuple[bool, int, bytes | None, bytes]:
        """fin, opcode, the mask (None when unmasked) and the unmasked payload."""
        head = self.inp.read(2)
        length = head[1] & 0x7F
        if length == 126:
            length = struct.unpack(">H", self.inp.read(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", self.inp.read(8))[0]
        mask = self.inp.read(4) if head[1] & 0x80 else None
        payload = self.inp.read(length)
        if mask:
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        return bool(head[0] & 0x80), head[0] & 0x0F, mask, payload

    def close_all(self) -> None:
        self.writer.shutdown(wait=False)
        for stream in (self.inp, self.out, *self.client_streams):
            try:
                stream.close()
            except OSError:
                pass


@pytest.fixture
def peer():
    peer = Peer()
    yield peer
    peer.close_all()


def handshake(peer: Peer, **answer) -> None:
    """The client's handshake against the peer's answer; raises what the client raised."""
    with ThreadPoolExecutor(1) as pool:
        done = pool.submit(peer.pipe.handshake)
        peer.read_request()
        if answer.pop("hang_up", False):
            peer.end()
        else:
            peer.answer(**answer)
        done.result(timeout=10)


def test_the_upgrade_request_is_a_websocket_13_get_with_a_fresh_key(peer):
    handshake(peer)
    assert peer.request_line == b"GET / HTTP/1.1\r\n"
    assert peer.headers["host"] == "localhost"
    assert peer.headers["upgrade"].lower() == "websocket"
    assert "upgrade" in peer.headers["connection"].lower()
    assert peer.headers["sec-websocket-version"] == "13"
    assert len(base64.b64decode(peer.headers["sec-websocket-key"])) == 16


@pytest.mark.parametrize("size", [5, 300, 100_000])  # the 7-bit, 16-bit and 64-bit lengths
def test_a_sent_message_is_one_masked_text_frame(peer, size):
    handshake(peer)
    text = ("é" * size)[:size]
    with ThreadPoolExecutor(1) as pool:  # a large message fills the pipe before it is read
        sent = pool.submit(peer.pipe.send, text)
        fin, opcode, mask, payload = peer.read_frame()
        sent.result(timeout=10)
    assert (fin, opcode, payload) == (True, TEXT, text.encode("utf-8"))
    assert mask is not None and len(mask) == 4


def test_frames_that_come_with_the_upgrade_answer_are_kept(peer):
    handshake(peer, then=frame(TEXT, b'{"first":1}'))
    assert peer.pipe.receive() == b'{"first":1}'


def test_a_fragmented_message_is_joined_and_a_ping_between_is_answered(peer):
    handshake(peer)
    big = b"x" * 70_000
    peer.write(frame(TEXT, b"[" + big[:30_000], fin=False) + frame(PING, b"hi")
               + frame(CONTINUATION, big[30_000:], fin=False) + frame(CONTINUATION, b"]"))
    assert peer.pipe.receive() == b"[" + big + b"]"
    fin, opcode, mask, payload = peer.read_frame()
    assert (fin, opcode, payload) == (True, PONG, b"hi") and mask is not None


def test_binary_messages_and_unsolicited_pongs(peer):
    handshake(peer)
    peer.write(frame(PONG, b"?") + frame(BINARY, b"\x00\xff") + frame(TEXT, b"next"))
    assert peer.pipe.receive() == b"\x00\xff"
    assert peer.pipe.receive() == b"next"


def test_a_close_from_the_peer_is_answered_and_ends_the_messages(peer):
    handshake(peer)
    peer.write(frame(CLOSE, struct.pack(">H", 1001)))
    assert peer.pipe.receive() is None
    fin, opcode, mask, payload = peer.read_frame()
    assert (opcode, payload[:2]) == (CLOSE, struct.pack(">H", 1001)) and mask is not None
    with pytest.raises(WebSocketError):
        peer.pipe.send("too late")
    peer.pipe.close()  # already closed: nothing more is sent, nothing is raised


def test_close_sends_one_close_frame_and_is_quiet_when_the_peer_is_gone(peer):
    handshake(peer)
    peer.pipe.close()
    peer.pipe.close()
    fin, opcode, mask, payload = peer.read_frame()
    assert (fin, opcode, payload) == (True, CLOSE, struct.pack(">H", 1000)) and mask is not None
    with pytest.raises(WebSocketError):
        peer.pipe.send("after close")
    peer.inp.close()
    peer.pipe.close()  # a broken pipe is not raised


def test_the_end_of_the_stream_ends_the_messages(peer):
    handshake(peer)
    peer.write(frame(TEXT, b"last"))
    peer.end()
    assert peer.pipe.receive() == b"last"
    assert peer.pipe.receive() is None


def test_the_end_of_the_stream_inside_a_fragmented_message_is_an_error(peer):
    handshake(peer)
    peer.write(frame(TEXT, b"half", fin=False))
    peer.end()
    with pytest.raises(WebSocketError):
        peer.pipe.receive()


@pytest.mark.parametrize(
    "answer",
    [
        {"status": b"404 Not Found"},
        {"accept": "d3JvbmcgYWNjZXB0IGtleQ=="},
        {"hang_up": True},
    ],
    ids=["refused", "wrong-accept", "hang-up"],
)
def test_an_upgrade_that_fails_is_a_websocket_error(peer, answer):
    with pytest.raises(WebSocketError):
        handshake(peer, **answer)


@pytest.mark.parametrize(
    "data",
    [
        frame(TEXT, b"masked", mask=b"abcd"),
        frame(TEXT, b"rsv", rsv=0x40),
        frame(CONTINUATION, b"orphan"),
        frame(TEXT, b"a", fin=False) + frame(TEXT, b"b"),
        frame(0x3, b"unknown opcode"),
        frame(PING, b"p" * 126),
        frame(PING, b"p", fin=False),
        frame(TEXT, b"\xff\xfe not utf-8"),  # RFC 6455 8.1: a text message must be UTF-8
    ],
    ids=["masked", "reserved-bits", "orphan-continuation", "interleaved", "unknown-opcode",
         "long-control", "fragmented-control", "bad-utf8"],
)
def test_a_server_that_breaks_the_protocol_is_a_websocket_error(peer, data):
    handshake(peer)
    peer.write(data)
    with pytest.raises(WebSocketError):
        peer.pipe.receive()

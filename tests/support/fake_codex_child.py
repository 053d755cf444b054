"""A small fake JSON-RPC child for transport faults the real Codex cannot be made to show.

    python -m tests.support.fake_codex_child MODE [--websocket]

It answers every request with `{"id": N, "result": {"echo": METHOD, "id": N, "params": ...}}`
(like Codex, without `"jsonrpc"`), except where MODE says otherwise:

  normal            answer everything; `notify/me` also sends the notification
                    `test/notified` *before* its response (a notification that arrives
                    before anyone waits for it); `ask/me` sends a server request (id 0)
                    `item/commandExecution/requestApproval` and answers with the reply it got
                    (`ask/unknown` does the same with `item/tool/call`); `hang/forever` is
                    never answered but announced by the notification `test/hanging`;
                    `notify/many` sends `params.count` notifications `test/many` first
  exit-mid-request  on `hang/exit`: write a reason to stderr and exit with code 3, unanswered
  malformed-line    on `break/line`: write a line that is not JSON
  not-jsonrpc       on `break/shape`: write a JSON object that is no JSON-RPC message
  stderr-flood      on `flood/stderr`: write `params.megabytes` MB to stderr, then answer
  exit-at-start     write a reason to stderr and exit with code 1 before reading anything
  silent            read everything, answer nothing
  hang-turn-start   never answer `turn/start`, but announce it with `test/hanging`
  stop-reading      announce `test/not-reading`, then never read stdin again (nor exit),
                    so a large enough write from the client fills the pipe and blocks
  hang              answer `initialize`, then never answer `thread/list` and write nothing
  hang-read         list one thread (`thread-1`), then never answer `thread/read`
  flood             on `thread/list`, begin the answer and go on with one line that has no
                    newline: $FAKE_CODEX_FLOOD_BYTES bytes (16 MiB if unset), then nothing
  never-ends-line   on `thread/list`, write the start of the answer without its newline,
                    then nothing
In every mode `env/get` answers with the child's environment and working directory.
In the last four, once the fault begins the child goes on reading (and exits when its
input closes); with $FAKE_CODEX_PID_FILE set it first starts a grandchild that outlives it
and writes "PID GRANDCHILD_PID" to that file (atomically), so a test can wait for the fault
and check that both processes end.

With --websocket it speaks the server side of WebSocket over stdio (like the Codex proxy).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
import subprocess
import sys
import threading
from typing import Any

FLOOD_LINE = b"FLOODED-STDERR-LINE " + b"x" * 100 + b"\n"
FAULTS = {"hang": "thread/list", "hang-read": "thread/read", "flood": "thread/list",
          "never-ends-line": "thread/list"}
ONE_THREAD = {"data": [{"id": "thread-1", "name": "the one thread", "cwd": "/", "createdAt": 1767225600,
                        "updatedAt": 1767225600, "status": {"type": "notLoaded"}}], "nextCursor": None}


def child_argv(mode: str = "normal", *, websocket: bool = False) -> list[str]:
    """The command that runs this fake child (by path: it needs no package on sys.path)."""
    return [sys.executable, os.path.abspath(__file__), mode] + (["--websocket"] if websocket else [])


class LineIO:
    def __init__(self) -> None:
        self.inp, self.out = sys.stdin.buffer, sys.stdout.buffer

    def read(self) -> bytes | None:
        line = self.inp.readline()
        return line or None

    def write(self, data: bytes) -> None:
        self.out.write(data + b"\n")
        self.out.flush()


class WebSocketServerIO:
    """The server half of RFC 6455 over stdio: unmasked frames out, masked frames in."""

    def __init__(self) -> None:
        self.inp, self.out = sys.stdin.buffer, sys.stdout.buffer
        key = ""
        while True:
            line = self.inp.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode().partition(":")
            if name.strip().lower() == "sec-websocket-key":
                key = value.strip()
        accept = base64.b64encode(hashlib.sha1(key.encode() + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
        self.out.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        self.out.flush()

    def read(self) -> bytes | None:
        while True:
            head = self.inp.read(2)
            if len(head) < 2:
                return None
            opcode, length = head[0] & 0x0F, head[1] & 0x7F
            if length == 126:
                length = struct.unpack(">H", self.inp.read(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self.inp.read(8))[0]
            mask = self.inp.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.inp.read(length)))
            if opcode == 0x8:
                return None
            if opcode == 0x9:
                self._frame(0xA, data)
                continue
            if opcode in (0x1, 0x2):
                return data

    def _frame(self, opcode: int, data: bytes, fin: bool = True) -> None:
        length = len(data)
        head = bytes([(0x80 if fin else 0) | opcode])
        if length < 126:
            head += bytes([length])
        elif length < 65536:
            head += bytes([126]) + struct.pack(">H", length)
        else:
            head += bytes([127]) + struct.pack(">Q", length)
        self.out.write(head + data)
        self.out.flush()

    def write(self, data: bytes) -> None:
        # Ping first, and split the message in two frames, so clients meet both.
        self._frame(0x9, b"hi")
        half = len(data) // 2
        self._frame(0x1, data[:half], fin=False)
        self._frame(0x0, data[half:])


def announce_fault() -> None:
    """Start a grandchild that outlives this child, then name both in $FAKE_CODEX_PID_FILE."""
    path = os.environ.get("FAKE_CODEX_PID_FILE")
    if not path:
        return
    grandchild = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(path + ".tmp", "w") as file:
        file.write(f"{os.getpid()} {grandchild.pid}\n")
    os.replace(path + ".tmp", path)


def begin_fault(mode: str, request_id: int, out: Any) -> None:
    announce_fault()
    if mode == "flood":
        out.write(b'{"id": %d, "result": {"data": "' % request_id)
        left = int(os.environ.get("FAKE_CODEX_FLOOD_BYTES") or 16 * 1024 * 1024)
        block = b"x" * 65536
        while left > 0:
            out.write(block[:left])
            left -= len(block)
    elif mode == "never-ends-line":
        out.write(b'{"id": %d, "result": {"data": [{"id": "thread-' % request_id)
    out.flush()


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "normal"
    if mode == "exit-at-start":
        sys.stderr.write("Error: the fake child refuses to start (as asked)\n")
        sys.exit(1)
    io = WebSocketServerIO() if "--websocket" in sys.argv else LineIO()

    def send(obj: dict) -> None:
        io.write(json.dumps(obj).encode())

    if mode == "stop-reading":
        send({"method": "test/not-reading", "params": {}})
        threading.Event().wait()  # alive, holding its stdin open, never reading it

    while True:
        raw = io.read()
        if raw is None:
            return
        try:
            message = json.loads(raw)
        except ValueError:
            continue  # like Codex: a non-JSON input line is ignored
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        params = message.get("params")
        if mode == "silent":
            continue
        if method == FAULTS.get(mode):
            begin_fault(mode, request_id, sys.stdout.buffer)
            continue
        if method == "thread/list" and mode == "hang-read":
            archived = (params or {}).get("archived")
            send({"id": request_id, "result": {"data": [], "nextCursor": None} if archived else ONE_THREAD})
            continue
        if method == "env/get":
            send({"id": request_id, "result": {"env": dict(os.environ), "cwd": os.getcwd()}})
            continue
        if method == "turn/start" and mode == "hang-turn-start":
            send({"method": "test/hanging", "params": {"for": request_id}})
            continue
        if method == "hang/exit" and mode == "exit-mid-request":
            sys.stderr.write("Error: the fake child exits in the middle of a request\n")
            sys.stderr.flush()
            os._exit(3)
        if method == "break/line" and mode == "malformed-line":
            io.write(b"this is not json {")
            continue
        if method == "break/shape" and mode == "not-jsonrpc":
            send({"hello": "world"})
            continue
        if method == "flood/stderr":
            for _ in range(int(params.get("megabytes", 1) * 1024 * 1024 / len(FLOOD_LINE))):
                sys.stderr.buffer.write(FLOOD_LINE)
            sys.stderr.flush()
        if method == "hang/forever":
            send({"method": "test/hanging", "params": {"for": request_id}})
            continue
        if method == "notify/many":
            for n in range(params["count"]):
                send({"method": "test/many", "params": {"n": n}})
        if method == "notify/me":
            send({"method": "test/notified", "params": {"for": request_id}})
        if method == "ask/me":
            send({"id": 0, "method": "item/commandExecution/requestApproval", "params": {"itemId": "x"}})
            reply = json.loads(io.read() or b"{}")
            send({"id": request_id, "result": {"reply": reply}})
            continue
        if method == "ask/unknown":
            send({"id": 1, "method": "item/tool/call", "params": {}})
            reply = json.loads(io.read() or b"{}")
            send({"id": request_id, "result": {"reply": reply}})
            continue
        send({"id": request_id, "result": {"echo": method, "id": request_id, "params": params}})


if __name__ == "__main__":
    main()

"""What the fake model APIs (fake_responses_server.py, fake_anthropic_server.py) share:
a loopback HTTP server on a thread of this process, JSON answers, server-sent events, a
reply held open until released, and the prompts seen.

Stdlib only; binds 127.0.0.1 only, on a port the system picks.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class ModelHandler(BaseHTTPRequestHandler):
    """One request. Subclasses answer it (`do_POST`) with the helpers below."""

    server: ModelServer

    def log_message(self, format: str, *args: object) -> None:  # keep stderr quiet
        pass

    def extra_headers(self) -> dict[str, str]:
        """Headers every answer carries besides its own (an API's request id)."""
        return {}

    def read_json(self) -> dict[str, Any]:
        """The request's JSON body; {} when there is none or it is no JSON."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {}

    def send_json(self, code: int, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        for name, value in self.extra_headers().items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_events(self) -> None:
        """A 200 answer that streams server-sent events until the connection closes."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        for name, value in self.extra_headers().items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def send_event(self, name: str, data: dict[str, Any]) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def hold(self, keepalive: Callable[[], None]) -> None:
        """Hold the reply open until `release_holds()` or `close()`; `keepalive` writes
        something each round, which notices a client that hung up."""
        self.server.hold_started.set()
        while not self.server.release.wait(0.2):
            keepalive()


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler: type[ModelHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.release = threading.Event()
        self.hold_started = threading.Event()
        self.prompts: list[str] = []
        self.lock = threading.Lock()

    def record(self, text: str) -> None:
        with self.lock:
            self.prompts.append(text)


class ModelServerThread:
    """A fake model API served on a thread of this process until `close()`."""

    def __init__(self, server: ModelServer) -> None:
        self._server = server
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def prompts(self) -> list[str]:
        """The last user text of every model request so far."""
        with self._server.lock:
            return list(self._server.prompts)

    @property
    def hold_started(self) -> threading.Event:
        """Set once a HOLD reply is being held open."""
        return self._server.hold_started

    def release_holds(self) -> None:
        self._server.release.set()

    def close(self) -> None:
        self._server.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

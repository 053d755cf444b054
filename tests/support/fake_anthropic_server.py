"""A stand-in for the Anthropic Messages API, enough for real Claude Code turns offline.

Stdlib only; binds 127.0.0.1 only; runs on a thread of the test process and stops with
`close()` (or when the process ends). Adapted from the research probe
(research/fake_anthropic_server.py). Point the bundled Claude Code CLI at it with the
environment `claude_env(server.url, config_dir, home)` gives (tests/support/claude_prompts.py).

The reply is picked from the last text block of the last user message of a request:
  * "HOLD"     -> starts a streamed reply, then holds the stream open until
                  `release_holds()`, `close()` or the client hangs up (interrupt tests).
  * "HANG"     -> reads the request and answers nothing at all (a model API that hangs)
                  until released or closed.
  * "FAIL500"  -> HTTP 500 `api_error` (with CLAUDE_CODE_MAX_RETRIES=0 the CLI gives up
                  at once).
  * otherwise  -> REPLY_PREFIX + the prompt's last line (at most 60 characters).
A request without `"stream": true` gets the same reply as one JSON message.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY_PREFIX = "Fake Claude says: "


def last_user_text(body: dict) -> str:
    """The last text block of the last user message (Claude Code puts system reminders
    in earlier blocks of the same message)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [block.get("text", "") for block in content or [] if isinstance(block, dict)
                 and block.get("type") == "text"]
        return texts[-1] if texts else ""
    return ""


def _usage(output_tokens: int = 5) -> dict:
    return {"input_tokens": 12, "output_tokens": output_tokens, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # keep stderr quiet
        pass

    def _json(self, code: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("request-id", "req_fake_" + uuid.uuid4().hex[:12])
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "no such path"}})

    do_HEAD = do_GET

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?", 1)[0]
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": 12})
            return
        if path != "/v1/messages":
            self.do_GET()
            return
        text = last_user_text(body)
        self.server.record(text, body)
        try:
            if "FAIL500" in text:
                self._json(500, {"type": "error", "error": {"type": "api_error", "message": "fake injected error"}})
            elif "HANG" in text:
                self.server.hang_started.set()
                self.server.release.wait()
            else:
                lines = text.strip().splitlines()
                reply = REPLY_PREFIX + (lines[-1][:60] if lines else "")
                if body.get("stream"):
                    self._stream(body.get("model") or "claude-fake", reply, hold="HOLD" in text)
                else:
                    self._json(200, {"id": "msg_fake_" + uuid.uuid4().hex[:20], "type": "message",
                                     "role": "assistant", "model": body.get("model") or "claude-fake",
                                     "content": [{"type": "text", "text": reply}], "stop_reason": "end_turn",
                                     "stop_sequence": None, "usage": _usage()})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up, e.g. after an interrupt

    def _event(self, name: str, data: dict) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _stream(self, model: str, reply: str, *, hold: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", "req_fake_" + uuid.uuid4().hex[:12])
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        self._event("message_start", {"type": "message_start", "message": {
            "id": "msg_fake_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": _usage(1)}})
        self._event("content_block_start", {"type": "content_block_start", "index": 0,
                                            "content_block": {"type": "text", "text": ""}})
        half = max(1, len(reply) // 2)
        self._event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "text_delta", "text": reply[:half]}})
        if hold:
            self.server.hold_started.set()
            # A ping each round notices a client that hung up.
            while not self.server.release.wait(0.2):
                self._event("ping", {"type": "ping"})
        self._event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "text_delta", "text": reply[half:]}})
        self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
        self._event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                         "stop_sequence": None},
                                      "usage": {"output_tokens": 5}})
        self._event("message_stop", {"type": "message_stop"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.release = threading.Event()
        self.hold_started = threading.Event()
        self.hang_started = threading.Event()
        self.prompts: list[str] = []
        self.bodies: list[dict] = []
        self._lock = threading.Lock()

    def record(self, text: str, body: dict) -> None:
        with self._lock:
            self.prompts.append(text)
            self.bodies.append(body)


class FakeAnthropicServer:
    """The fake Messages API on a thread of this process."""

    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def prompts(self) -> list[str]:
        """The last user text of every model request so far."""
        with self._server._lock:
            return list(self._server.prompts)

    @property
    def bodies(self) -> list[dict]:
        """Every model request's JSON body so far."""
        with self._server._lock:
            return list(self._server.bodies)

    @property
    def hold_started(self) -> threading.Event:
        """Set once a HOLD reply is being held open."""
        return self._server.hold_started

    @property
    def hang_started(self) -> threading.Event:
        """Set once a HANG request is being left unanswered."""
        return self._server.hang_started

    def reset(self) -> None:
        """Forget held replies' events (a new test's holds hold again)."""
        self._server.release.clear()
        self._server.hold_started.clear()
        self._server.hang_started.clear()

    def release_holds(self) -> None:
        self._server.release.set()

    def close(self) -> None:
        self._server.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> FakeAnthropicServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

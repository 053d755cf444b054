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

import threading
import uuid

from tests.support.fake_model_http import ModelHandler, ModelServer, ModelServerThread

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


class _Handler(ModelHandler):
    server: _Server

    def extra_headers(self) -> dict[str, str]:
        return {"request-id": "req_fake_" + uuid.uuid4().hex[:12]}

    def do_GET(self) -> None:
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "no such path"}})

    do_HEAD = do_GET

    def do_POST(self) -> None:
        body = self.read_json()
        path = self.path.split("?", 1)[0]
        if path == "/v1/messages/count_tokens":
            self.send_json(200, {"input_tokens": 12})
            return
        if path != "/v1/messages":
            self.do_GET()
            return
        text = last_user_text(body)
        self.server.record_request(text, body)
        try:
            if "FAIL500" in text:
                self.send_json(500, {"type": "error", "error": {"type": "api_error", "message": "fake injected error"}})
            elif "HANG" in text:
                self.server.hang_started.set()
                self.server.release.wait()
            else:
                lines = text.strip().splitlines()
                reply = REPLY_PREFIX + (lines[-1][:60] if lines else "")
                if body.get("stream"):
                    self._stream(body.get("model") or "claude-fake", reply, hold="HOLD" in text)
                else:
                    self.send_json(200, {"id": "msg_fake_" + uuid.uuid4().hex[:20], "type": "message",
                                     "role": "assistant", "model": body.get("model") or "claude-fake",
                                     "content": [{"type": "text", "text": reply}], "stop_reason": "end_turn",
                                     "stop_sequence": None, "usage": _usage()})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up, e.g. after an interrupt

    def _event(self, name: str, data: dict) -> None:
        self.send_event(name, data)

    def _stream(self, model: str, reply: str, *, hold: bool) -> None:
        self.start_events()
        self._event("message_start", {"type": "message_start", "message": {
            "id": "msg_fake_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": _usage(1)}})
        self._event("content_block_start", {"type": "content_block_start", "index": 0,
                                            "content_block": {"type": "text", "text": ""}})
        half = max(1, len(reply) // 2)
        self._event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "text_delta", "text": reply[:half]}})
        if hold:
            self.hold(lambda: self._event("ping", {"type": "ping"}))
        self._event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "text_delta", "text": reply[half:]}})
        self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
        self._event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                         "stop_sequence": None},
                                      "usage": {"output_tokens": 5}})
        self._event("message_stop", {"type": "message_stop"})


class _Server(ModelServer):
    def __init__(self) -> None:
        super().__init__(_Handler)
        self.hang_started = threading.Event()
        self.bodies: list[dict] = []

    def record_request(self, text: str, body: dict) -> None:
        with self.lock:
            self.prompts.append(text)
            self.bodies.append(body)


class FakeAnthropicServer(ModelServerThread):
    """The fake Messages API on a thread of this process."""

    _server: _Server

    def __init__(self) -> None:
        super().__init__(_Server())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def bodies(self) -> list[dict]:
        """Every model request's JSON body so far."""
        with self._server.lock:
            return list(self._server.bodies)

    @property
    def hang_started(self) -> threading.Event:
        """Set once a HANG request is being left unanswered."""
        return self._server.hang_started

    def reset(self) -> None:
        """Forget held replies' events (a new test's holds hold again)."""
        self._server.release.clear()
        self._server.hold_started.clear()
        self._server.hang_started.clear()

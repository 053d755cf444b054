#!/usr/bin/env python3
"""A stand-in for the OpenAI Responses API, enough for real `codex app-server` turns.

Stdlib only; binds 127.0.0.1 only. Adapted from the research probe
(research/fake_responses_server.py): it can run inside the test process
(`FakeResponsesServer`, stopped by `close()` or when the process ends) or as a child
process that stops by itself when its parent goes away (stdin reaches EOF) or after
`--idle-timeout` seconds without a request.

Point Codex at it with `tests.support.codex_home.write_fake_model_config(home, server.url)`.

Behaviour is picked from the text of the last user message:
  * "RUN: <cmd>"      -> a shell tool call first ("ESCALATE" asks for an unsandboxed run,
                         which makes Codex send an approval request under on-request);
                         after the tool output comes back, a text message quoting it.
  * "HOLD"            -> starts a reply and holds the stream open until `release_holds()`,
                         `close()` or the client hangs up (turn/interrupt tests).
  * "FAIL500"         -> HTTP 500 (a turn that fails).
  * "MINIMAL"         -> only response.output_item.done + response.completed.
  * "NOCOMPLETE"      -> a stream without response.completed (a stream error).
  * otherwise         -> the canned reply REPLY_TEXT.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import threading
from pathlib import Path

if __package__ in (None, ""):  # run as a script (a child that stops by itself): its package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.fake_model_http import ModelHandler, ModelServer, ModelServerThread  # noqa: E402

REPLY_TEXT = os.environ.get("FAKE_REPLY_TEXT", "Hello from the fake model.")
_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


def last_user_text(body: dict) -> str:
    for item in reversed(body.get("input") or []):
        if item.get("type", "message") == "message" and item.get("role") == "user":
            parts = item.get("content") or []
            if isinstance(parts, str):
                return parts
            return "".join(p.get("text", "") for p in parts if isinstance(p, dict))
    return ""


def _last_item_is_tool_output(body: dict) -> bool:
    items = body.get("input") or []
    return bool(items) and items[-1].get("type") in (
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
    )


def _usage() -> dict:
    return {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }


class _Handler(ModelHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self.server.touch()
        self.send_json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        self.server.touch()
        body = self.read_json()
        if not self.path.split("?")[0].rstrip("/").endswith("/responses"):
            self.send_json(404, {"error": {"message": "not found", "type": "not_found"}})
            return
        text = last_user_text(body)
        self.server.record(text)
        if "FAIL500" in text:
            self.send_json(500, {"error": {"message": "fake failure", "type": "server_error"}})
            return
        self.start_events()
        try:
            if "RUN:" in text and not _last_item_is_tool_output(body):
                self._tool_call(body, text.split("RUN:", 1)[1].strip())
            else:
                reply = REPLY_TEXT
                if _last_item_is_tool_output(body):
                    out = body["input"][-1].get("output")
                    reply = "Tool finished. Output was: " + (
                        out if isinstance(out, str) else json.dumps(out)
                    )[:200]
                self._message(reply, hold="HOLD" in text, minimal="MINIMAL" in text,
                              complete="NOCOMPLETE" not in text)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up, e.g. after turn/interrupt

    def _event(self, obj: dict) -> None:
        self.send_event(obj["type"], obj)

    def _held(self) -> None:
        self.wfile.write(b": held\n\n")  # a comment: a keep-alive no client parses
        self.wfile.flush()

    def _completed(self, rid: str, output: list) -> None:
        self._event({"type": "response.completed",
                     "response": {"id": rid, "object": "response", "status": "completed",
                                  "model": "fake-model", "output": output, "usage": _usage()}})

    def _message(self, reply: str, *, hold: bool, minimal: bool, complete: bool) -> None:
        rid, mid = _next_id("resp"), _next_id("msg")
        item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": reply, "annotations": []}]}
        if minimal:
            self._event({"type": "response.output_item.done", "output_index": 0, "item": item})
            self._completed(rid, [item])
            return
        self._event({"type": "response.created",
                     "response": {"id": rid, "object": "response", "status": "in_progress",
                                  "model": "fake-model", "output": []}})
        self._event({"type": "response.output_item.added", "output_index": 0,
                     "item": {"type": "message", "id": mid, "role": "assistant",
                              "status": "in_progress", "content": []}})
        self._event({"type": "response.output_text.delta", "item_id": mid, "output_index": 0,
                     "content_index": 0, "delta": reply})
        if hold:
            self.hold(self._held)
        self._event({"type": "response.output_item.done", "output_index": 0, "item": item})
        if complete:
            self._completed(rid, [item])

    def _tool_call(self, body: dict, cmd: str) -> None:
        rid, call_id = _next_id("resp"), _next_id("call")
        names = [t.get("name") or t.get("type") for t in body.get("tools") or []]
        escalate = "ESCALATE" in cmd
        cmd = cmd.replace("ESCALATE", "").strip()
        if "exec_command" in names:
            name, args = "exec_command", {"cmd": cmd, "yield_time_ms": 2000}
            if escalate:
                args.update(sandbox_permissions="require_escalated",
                            justification="Fake model wants to run this outside the sandbox")
        elif "shell_command" in names:
            name, args = "shell_command", {"command": cmd}
        else:
            name, args = "shell", {"command": ["bash", "-lc", cmd]}
        item = {"type": "function_call", "id": _next_id("fc"), "call_id": call_id, "name": name,
                "arguments": json.dumps(args), "status": "completed"}
        self._event({"type": "response.output_item.added", "output_index": 0, "item": item})
        self._event({"type": "response.output_item.done", "output_index": 0, "item": item})
        self._completed(rid, [item])


class _Server(ModelServer):
    def __init__(self) -> None:
        super().__init__(_Handler)
        self.activity = threading.Event()

    def touch(self) -> None:
        self.activity.set()


class FakeResponsesServer(ModelServerThread):
    """The fake model API on a thread of this process."""

    def __init__(self) -> None:
        super().__init__(_Server())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", help="write the port here once listening")
    parser.add_argument("--idle-timeout", type=float, default=600.0,
                        help="stop after this many seconds without a request")
    args = parser.parse_args()
    server = FakeResponsesServer()
    port = server.url.split(":")[2].split("/")[0]
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as out:
            out.write(port)
        os.replace(args.port_file + ".tmp", args.port_file)
    print(f"listening on {server.url}", file=sys.stderr, flush=True)
    stop = threading.Event()
    activity = server._server.activity  # type: ignore[attr-defined]

    def parent_gone() -> None:
        # stdin is a pipe from the parent: EOF means the parent has exited.
        sys.stdin.read()
        stop.set()
        activity.set()

    threading.Thread(target=parent_gone, daemon=True).start()
    while not stop.is_set():
        activity.clear()
        if not activity.wait(args.idle_timeout) and not stop.is_set():
            break
    server.close()


if __name__ == "__main__":
    main()

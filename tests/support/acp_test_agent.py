#!/usr/bin/env python3
"""Deterministic, offline ACP test agent (stdio, newline-delimited JSON-RPC).

Built on the agent side of the `agent-client-protocol` SDK (import name `acp`, pinned in
pyproject.toml). Adapted from research/acp_test_agent.py: it needs no model and no
network, and persists its sessions as JSON files so that a *new* agent process can list,
load and resume sessions an earlier one created, which is what the driver's tests need.

Supported wire methods:
  initialize, session/new, session/list, session/load (replays history as
  session/update notifications), session/resume (no replay), session/close,
  session/prompt (streams chunks, honours session/cancel, can ask for
  permission), session/set_mode, session/set_config_option (select, grouped select
  and boolean).

Its parts, beside this file: the session files and the demo sessions
(acp_test_sessions.py), the modes and options a session advertises
(acp_test_controls.py), what a prompt streams (acp_test_prompts.py) and the scripted
faults (acp_test_faults.py).

Configuration (CLI flag or environment variable):
  --home DIR        ACP_TEST_AGENT_HOME   state dir (default: $TMPDIR/acp-test-agent)
  --seed N          ACP_TEST_AGENT_SEED   create N demo sessions (ids seed-000...)
                                          when the state dir has no sessions yet
  --page-size N     ACP_TEST_AGENT_PAGE_SIZE  session/list page size (default 50)
  --chunk-delay S   ACP_TEST_AGENT_CHUNK_DELAY  seconds between streamed chunks (0.02)
  --no-list / --no-load / --no-resume   do not advertise (and refuse) that feature
  --fail, --exit-on, --hang-on, --garbage-on, --stderr-flood, --load-barrier
                    the scripted faults (acp_test_faults.py)
Every session/load appends "begin <id>" and "end <id>" to <home>/loads.log, and the
client's initialize parameters are kept in <home>/initialize.json.

Run: python tests/support/acp_test_agent.py --home /tmp/state --seed 3
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextvars
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script (how tests start it): its package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from acp import PROTOCOL_VERSION, RequestError, run_agent  # noqa: E402
from acp.connection import StreamDirection, StreamEvent  # noqa: E402
from acp.schema import (  # noqa: E402
    AgentCapabilities,
    CloseSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionNotification,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from tests.support.acp_test_controls import (  # noqa: E402
    MODELS,
    PROFILES,
    config_options,
    mode_state,
    session_modes,
)
from tests.support.acp_test_faults import Faults, LoadBarrier  # noqa: E402
from tests.support.acp_test_prompts import play_turn  # noqa: E402
from tests.support.acp_test_sessions import Store, now, seed_sessions  # noqa: E402

AGENT_NAME = "acp-test-agent"
AGENT_VERSION = "0.1.0"


def _parse_update(update: dict[str, Any]) -> Any:
    """Turn a stored wire-form update dict into the SDK's typed union member."""
    return SessionNotification.model_validate({"sessionId": "x", "update": update}).update


# set by a handler that must send something only after its own response is written;
# a contextvar, so that each request's task sees its own
RESPONSE_SENT: contextvars.ContextVar[asyncio.Event | None] = contextvars.ContextVar(
    "RESPONSE_SENT", default=None
)


class TestAgent:
    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.store = Store(Path(opts.home))
        seed_sessions(self.store, opts.seed)
        self.conn: Any = None
        self.active: dict[str, dict[str, Any]] = {}  # sessions loaded in this process
        self.cancel_events: dict[str, asyncio.Event] = {}
        self.client_bool_options = False
        self._bg: set[asyncio.Task[Any]] = set()
        self.faults = Faults(opts)
        self.load_barrier = LoadBarrier(opts.load_barrier)

    # --- plumbing -------------------------------------------------------
    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    def _log_request(self, method: str, mcp_servers: Any) -> None:
        """What the client sent as MCP servers, one JSON line per session set-up."""
        servers = [s.model_dump(mode="json", by_alias=True) if hasattr(s, "model_dump") else s
                   for s in (mcp_servers or [])] if mcp_servers is not None else None
        with open(Path(self.opts.home) / "requests.jsonl", "a", encoding="utf-8") as log:
            log.write(json.dumps({"method": method, "mcpServers": servers}) + "\n")

    def _log_load(self, what: str, session_id: str) -> None:
        with open(Path(self.opts.home) / "loads.log", "a", encoding="utf-8") as log:
            log.write(f"{what} {session_id}\n")

    async def _send(self, session_id: str, update: dict[str, Any], record: bool = True) -> None:
        if record and session_id in self.active:
            self.active[session_id]["history"].append(update)
        await self.conn.session_update(session_id=session_id, update=_parse_update(update))

    def _require_active(self, session_id: str) -> dict[str, Any]:
        rec = self.active.get(session_id)
        if rec is None:
            raise RequestError.invalid_params({"details": f"session {session_id} is not loaded"})
        return rec

    def on_stream(self, event: StreamEvent) -> None:
        """An observer of every JSON-RPC message: when this task's response has been
        written, release what `_after_response` holds back. It runs in the request's
        own task, right after the SDK wrote the response, so the context is that of
        the handler which set RESPONSE_SENT."""
        message = event.message
        if event.direction is StreamDirection.OUTGOING and "id" in message and "method" not in message:
            sent = RESPONSE_SENT.get()
            if sent is not None:
                sent.set()

    def _after_response(self, session_id: str) -> None:
        """Like real agents, advertise slash commands right after session setup: after
        the response is on the wire, never before (a timer could lose that race under
        load, and the driver would rightly count the update as part of a load)."""
        sent = asyncio.Event()
        RESPONSE_SENT.set(sent)

        async def later() -> None:
            await sent.wait()
            try:
                await self._send(session_id, {"sessionUpdate": "available_commands_update", "availableCommands": [
                    {"name": "echo", "description": "Echo the input", "input": {"hint": "text to echo"}},
                    {"name": "clear", "description": "Forget the conversation"}]}, record=False)
            except ConnectionError:
                pass  # client went away

        task = asyncio.get_running_loop().create_task(later())
        self._bg.add(task)
        task.add_done_callback(self._bg.discard)

    def _touch(self, rec: dict[str, Any]) -> None:
        rec["updatedAt"] = now()
        self.store.put(rec)

    # --- ACP agent methods ---------------------------------------------
    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kw: Any) -> InitializeResponse:
        await self.faults.before("initialize")
        self.faults.flood_stderr()
        (Path(self.opts.home) / "initialize.json").write_text(json.dumps({
            "protocolVersion": protocol_version,
            "clientCapabilities": client_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
            if client_capabilities is not None else None,
            "clientInfo": client_info.model_dump(mode="json", by_alias=True, exclude_none=True)
            if client_info is not None else None,
            "environment": sorted(os.environ),
            "cwd": os.getcwd(),
        }))
        try:
            self.client_bool_options = client_capabilities.session.config_options.boolean is not None
        except AttributeError:
            self.client_bool_options = False
        o = self.opts
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=not o.no_load,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                session_capabilities=SessionCapabilities(
                    list=None if o.no_list else SessionListCapabilities(),
                    resume=None if o.no_resume else SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            agent_info=Implementation(name=AGENT_NAME, title="ACP Test Agent", version=AGENT_VERSION),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kw: Any) -> None:
        return None

    async def new_session(self, cwd: str, mcp_servers: Any = None, additional_directories: Any = None, **kw: Any) -> NewSessionResponse:
        await self.faults.before("session/new")
        self._log_request("session/new", mcp_servers)
        rec = {
            "sessionId": f"sess-{uuid.uuid4().hex[:12]}",
            "cwd": cwd,
            "title": None,
            "updatedAt": now(),
            "mode": "ask",
            "config": {"model": "fast", "verbose": False},
            "history": [],
        }
        self.store.put(rec)
        self.active[rec["sessionId"]] = rec
        self._after_response(rec["sessionId"])
        return NewSessionResponse(session_id=rec["sessionId"], modes=mode_state(rec), config_options=config_options(rec, self.client_bool_options))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kw: Any) -> ListSessionsResponse:
        if self.opts.no_list:
            raise RequestError.method_not_found("session/list")
        await self.faults.before("session/list")
        recs = [r for r in self.store.all() if cwd is None or r["cwd"] == cwd]
        recs.sort(key=lambda r: (r.get("updatedAt") or "", r["sessionId"]), reverse=True)
        start = 0
        if cursor:
            try:
                start = int(base64.urlsafe_b64decode(cursor.encode()).decode().split(":", 1)[1])
            except (ValueError, IndexError):
                raise RequestError.invalid_params({"details": "bad cursor"}) from None
        page = recs[start : start + self.opts.page_size]
        nxt = start + len(page)
        next_cursor = base64.urlsafe_b64encode(f"off:{nxt}".encode()).decode() if nxt < len(recs) else None
        return ListSessionsResponse(
            sessions=[
                SessionInfo(session_id=r["sessionId"], cwd=r["cwd"], title=r.get("title"), updated_at=r.get("updatedAt"))
                for r in page
            ],
            next_cursor=next_cursor,
        )

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: Any = None, **kw: Any) -> LoadSessionResponse:
        if self.opts.no_load:
            raise RequestError.method_not_found("session/load")
        await self.faults.before("session/load")
        self._log_request("session/load", mcp_servers)
        rec = self.store.get(session_id)
        if rec is None:
            raise RequestError.resource_not_found(session_id)
        self._log_load("begin", session_id)
        try:
            await self.load_barrier.enter()
            self.active[session_id] = rec
            # Replay the whole conversation BEFORE answering the request.
            for update in list(rec["history"]):
                await self._send(session_id, update, record=False)
        finally:
            self._log_load("end", session_id)
            await self.load_barrier.leave()
        self._after_response(session_id)
        return LoadSessionResponse(modes=mode_state(rec), config_options=config_options(rec, self.client_bool_options))

    async def resume_session(self, session_id: str, cwd: str, mcp_servers: Any = None, additional_directories: Any = None, **kw: Any) -> ResumeSessionResponse:
        if self.opts.no_resume:
            raise RequestError.method_not_found("session/resume")
        await self.faults.before("session/resume")
        self._log_request("session/resume", mcp_servers)
        rec = self.store.get(session_id)
        if rec is None:
            raise RequestError.resource_not_found(session_id)
        self.active[session_id] = rec  # no replay for resume
        return ResumeSessionResponse(modes=mode_state(rec), config_options=config_options(rec, self.client_bool_options))

    async def close_session(self, session_id: str, **kw: Any) -> CloseSessionResponse:
        self.active.pop(session_id, None)
        ev = self.cancel_events.get(session_id)
        if ev:
            ev.set()
        return CloseSessionResponse()

    async def set_session_mode(self, session_id: str, mode_id: str, **kw: Any) -> SetSessionModeResponse:
        await self.faults.before("session/set_mode")
        rec = self._require_active(session_id)
        if mode_id not in {m[0] for m in session_modes(rec)}:
            raise RequestError.invalid_params({"details": f"unknown mode {mode_id}"})
        rec["mode"] = mode_id
        self._touch(rec)
        await self._send(session_id, {"sessionUpdate": "current_mode_update", "currentModeId": mode_id}, record=False)
        # The "mode" select option mirrors the mode, so tell the client it changed.
        opts = [o.model_dump(mode="json", by_alias=True, exclude_none=True) for o in config_options(rec, self.client_bool_options)]
        await self._send(session_id, {"sessionUpdate": "config_option_update", "configOptions": opts}, record=False)
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool, **kw: Any) -> SetSessionConfigOptionResponse:
        await self.faults.before("session/set_config_option")
        rec = self._require_active(session_id)
        if config_id == "mode":
            if value not in {m[0] for m in session_modes(rec)}:
                raise RequestError.invalid_params({"details": f"unknown mode {value}"})
            rec["mode"] = value
            await self._send(session_id, {"sessionUpdate": "current_mode_update", "currentModeId": value}, record=False)
        elif config_id == "model":
            if value not in {m[0] for m in MODELS}:
                raise RequestError.invalid_params({"details": f"unknown model {value}"})
            rec["config"]["model"] = value
        elif config_id == "profile":
            if value not in {v for values in PROFILES.values() for v, _ in values}:
                raise RequestError.invalid_params({"details": f"unknown profile {value}"})
            rec["config"]["profile"] = value
        elif config_id == "verbose" and self.client_bool_options:
            if not isinstance(value, bool):
                raise RequestError.invalid_params({"details": "verbose takes a boolean"})
            rec["config"]["verbose"] = value
        else:
            raise RequestError.invalid_params({"details": f"unknown config option {config_id}"})
        self._touch(rec)
        return SetSessionConfigOptionResponse(config_options=config_options(rec, self.client_bool_options))

    async def cancel(self, session_id: str, **kw: Any) -> None:
        ev = self.cancel_events.get(session_id)
        if ev is not None:
            ev.set()

    async def prompt(self, session_id: str, prompt: list[Any], **kw: Any) -> PromptResponse:
        await self.faults.before("session/prompt")
        rec = self._require_active(session_id)
        text = " ".join(getattr(b, "text", "") or "" for b in prompt).strip()
        cancel = self.cancel_events[session_id] = asyncio.Event()
        try:
            return await play_turn(self._send, self.conn, session_id, rec, text, cancel, self.opts.chunk_delay)
        finally:
            self.cancel_events.pop(session_id, None)
            if session_id in self.active:
                self._touch(rec)


def _options(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(description="Offline ACP test agent")
    p.add_argument("--home", default=env("ACP_TEST_AGENT_HOME") or os.path.join(tempfile.gettempdir(), "acp-test-agent"))
    p.add_argument("--seed", type=int, default=int(env("ACP_TEST_AGENT_SEED") or 0))
    p.add_argument("--page-size", type=int, default=int(env("ACP_TEST_AGENT_PAGE_SIZE") or 50))
    p.add_argument("--chunk-delay", type=float, default=float(env("ACP_TEST_AGENT_CHUNK_DELAY") or 0.02))
    p.add_argument("--fail", default=env("ACP_TEST_AGENT_FAIL") or "")
    p.add_argument("--no-list", action="store_true")
    p.add_argument("--no-load", action="store_true")
    p.add_argument("--no-resume", action="store_true")
    p.add_argument("--exit-on", default=env("ACP_TEST_AGENT_EXIT_ON") or "")
    p.add_argument("--hang-on", default=env("ACP_TEST_AGENT_HANG_ON") or "")
    p.add_argument("--garbage-on", default=env("ACP_TEST_AGENT_GARBAGE_ON") or "")
    p.add_argument("--stderr-flood", type=int, default=int(env("ACP_TEST_AGENT_STDERR_FLOOD") or 0))
    p.add_argument("--load-barrier", type=int, default=int(env("ACP_TEST_AGENT_LOAD_BARRIER") or 0))
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    opts = _options(argv)
    # use_unstable_protocol=True: in acp 0.12.1 the agent-side router still gates
    # session/resume, session/fork and session/close behind this flag.
    agent = TestAgent(opts)
    asyncio.run(run_agent(agent, use_unstable_protocol=True, observers=[agent.on_stream]))


if __name__ == "__main__":
    main(sys.argv[1:])

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

Configuration (CLI flag or environment variable):
  --home DIR        ACP_TEST_AGENT_HOME   state dir (default: $TMPDIR/acp-test-agent)
  --seed N          ACP_TEST_AGENT_SEED   create N demo sessions (ids seed-000...)
                                          when the state dir has no sessions yet
  --page-size N     ACP_TEST_AGENT_PAGE_SIZE  session/list page size (default 50)
  --chunk-delay S   ACP_TEST_AGENT_CHUNK_DELAY  seconds between streamed chunks (0.02)
  --no-list / --no-load / --no-resume   do not advertise (and refuse) that feature
  --fail METHODS    ACP_TEST_AGENT_FAIL   comma list of wire methods to answer
                                          with a JSON-RPC internal error

Fault injection (for the driver's fault tests; each names wire methods):
  --exit-on METHODS     exit with code 3 (a line on stderr first) when one is called
  --hang-on METHODS     never answer them
  --garbage-on METHODS  write a line that is no JSON to stdout instead of answering
  --stderr-flood BYTES  write that much to stderr before answering initialize
  --load-barrier N      every session/load waits until N loads are in flight at once
Every session/load appends "begin <id>" and "end <id>" to <home>/loads.log, and the
client's initialize parameters are kept in <home>/initialize.json.

Per-session controls: a session file may name the modes its answers advertise
("modes": mode ids, default ask, code and plan) and the configuration options they
carry ("optionIds", default all); the tests edit them to change what a later answer
says.

Prompt text triggers (case-insensitive substrings):
  "permission"  -> emits a tool_call and sends session/request_permission
  "slow"        -> streams 50 chunks (useful for cancel tests)
  "big"         -> one ~200 KB agent_message_chunk (framing / buffer tests)
  "tools"       -> emits tool_call + tool_call_update + plan

Run: python -m tests.support.acp_test_agent --home /tmp/state --seed 3
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as _dt
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, run_agent
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    CloseSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectGroup,
    SessionConfigSelectOption,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SessionNotification,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    ToolCallUpdate,
)

AGENT_NAME = "acp-test-agent"
AGENT_VERSION = "0.1.0"

MODES = [
    ("ask", "Ask", "Answer questions, change nothing"),
    ("code", "Code", "Edit files"),
    ("plan", "Plan", "Plan before acting"),
]
MODELS = [("fast", "Fast model"), ("smart", "Smart model")]
# A select option whose values come in groups (the schema's SessionConfigSelectGroup).
PROFILES = {"remote": [("gpt-a", "GPT A"), ("gpt-b", "GPT B")], "local": [("llama", "Llama")]}


def _session_modes(rec: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The modes this session advertises: its own `modes` ids when it names them."""
    known = {i: (i, n, d) for i, n, d in MODES}
    ids = rec.get("modes")
    if not isinstance(ids, list):
        return list(MODES)
    return [known.get(i, (i, i.title(), f"The {i} mode")) for i in ids]


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _parse_update(update: dict[str, Any]) -> Any:
    """Turn a stored wire-form update dict into the SDK's typed union member."""
    return SessionNotification.model_validate({"sessionId": "x", "update": update}).update


class Store:
    """One JSON file per session under <home>/sessions/."""

    def __init__(self, home: Path) -> None:
        self.dir = home / "sessions"
        self.dir.mkdir(parents=True, exist_ok=True)

    def _path(self, session_id: str) -> Path:
        safe = "".join(c for c in session_id if c.isalnum() or c in "-_")
        return self.dir / f"{safe}.json"

    def get(self, session_id: str) -> dict[str, Any] | None:
        p = self._path(session_id)
        if not p.exists():
            return None
        return json.loads(p.read_text(encoding="utf-8"))

    def put(self, rec: dict[str, Any]) -> None:
        p = self._path(rec["sessionId"])
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(rec, indent=1), encoding="utf-8")
        tmp.replace(p)

    def all(self) -> list[dict[str, Any]]:
        out = []
        for p in self.dir.glob("*.json"):
            try:
                out.append(json.loads(p.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue
        return out

    def delete(self, session_id: str) -> None:
        self._path(session_id).unlink(missing_ok=True)


def seed_sessions(store: Store, n: int) -> None:
    if n <= 0 or store.all():
        return
    base = _dt.datetime(2025, 1, 1, tzinfo=_dt.UTC)
    for i in range(n):
        sid = f"seed-{i:03d}"
        cwd = "/tmp/project-a" if i % 2 == 0 else "/tmp/project-b"
        tc = f"call-{i}"
        history = [
            {"sessionUpdate": "user_message_chunk", "content": _text(f"Hello #{i}")},
            {"sessionUpdate": "agent_thought_chunk", "content": _text("Thinking about the greeting.")},
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": "Read README", "priority": "high", "status": "completed"},
                    {"content": "Answer", "priority": "medium", "status": "in_progress"},
                ],
            },
            {
                "sessionUpdate": "tool_call",
                "toolCallId": tc,
                "title": "Read README.md",
                "kind": "read",
                "status": "pending",
                "locations": [{"path": f"{cwd}/README.md"}],
                "rawInput": {"path": f"{cwd}/README.md"},
            },
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tc,
                "status": "completed",
                "content": [{"type": "content", "content": _text("# README\n")}],
            },
            {"sessionUpdate": "agent_message_chunk", "content": _text("Hi there, ")},
            {"sessionUpdate": "agent_message_chunk", "content": _text(f"this is reply #{i}.")},
        ]
        store.put(
            {
                "sessionId": sid,
                "cwd": cwd,
                "title": f"Seeded session {i}",
                "updatedAt": (base + _dt.timedelta(hours=i)).isoformat().replace("+00:00", "Z"),
                "mode": "ask",
                "config": {"model": "fast", "verbose": False},
                "history": history,
            }
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
        self.fail = _methods(opts.fail)
        self.exit_on = _methods(opts.exit_on)
        self.hang_on = _methods(opts.hang_on)
        self.garbage_on = _methods(opts.garbage_on)
        self.loads_in_flight = 0
        self.barrier_passed = False
        self.loads_changed = asyncio.Condition()

    # --- plumbing -------------------------------------------------------
    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def _maybe_fail(self, method: str) -> None:
        if method in self.exit_on:
            sys.stderr.write(f"acp-test-agent: exiting on {method} as asked\n")
            sys.stderr.flush()
            os._exit(3)
        if method in self.garbage_on:
            os.write(1, b"this is no JSON-RPC message {\n")
            await asyncio.Event().wait()  # the garbage was the only answer
        if method in self.hang_on:
            await asyncio.Event().wait()  # never answers
        if method in self.fail:
            raise RequestError.internal_error({"details": f"injected failure for {method}"})

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

    def _modes(self, rec: dict[str, Any]) -> SessionModeState:
        return SessionModeState(
            current_mode_id=rec["mode"],
            available_modes=[SessionMode(id=i, name=n, description=d) for i, n, d in _session_modes(rec)],
        )

    def _config_options(self, rec: dict[str, Any]) -> list[Any]:
        opts: list[Any] = [
            SessionConfigOptionSelect(
                type="select",
                id="mode",
                name="Mode",
                category="mode",
                current_value=rec["mode"],
                options=[SessionConfigSelectOption(value=i, name=n) for i, n, _ in _session_modes(rec)],
            ),
            SessionConfigOptionSelect(
                type="select",
                id="model",
                name="Model",
                category="model",
                current_value=rec["config"]["model"],
                options=[SessionConfigSelectOption(value=v, name=n) for v, n in MODELS],
            ),
            SessionConfigOptionSelect(
                type="select",
                id="profile",
                name="Profile",
                current_value=rec["config"].get("profile", "gpt-a"),
                options=[
                    SessionConfigSelectGroup(group=g, name=g.title(),
                                             options=[SessionConfigSelectOption(value=v, name=n) for v, n in values])
                    for g, values in PROFILES.items()
                ],
            ),
        ]
        # Spec: boolean options only for clients that advertised
        # clientCapabilities.session.configOptions.boolean.
        if self.client_bool_options:
            opts.append(
                SessionConfigOptionBoolean(
                    type="boolean",
                    id="verbose",
                    name="Verbose output",
                    current_value=bool(rec["config"].get("verbose", False)),
                )
            )
        wanted = rec.get("optionIds")
        return opts if not isinstance(wanted, list) else [o for o in opts if o.id in wanted]

    def _after_response(self, session_id: str) -> None:
        """Like real agents, advertise slash commands right after session setup."""

        async def later() -> None:
            await asyncio.sleep(0.005)  # let the JSON-RPC response go out first
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
        rec["updatedAt"] = _now()
        self.store.put(rec)

    # --- ACP agent methods ---------------------------------------------
    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kw: Any) -> InitializeResponse:
        await self._maybe_fail("initialize")
        if self.opts.stderr_flood:
            line = b"acp-test-agent: flooding stderr " + b"x" * 990 + b"\n"
            for _ in range(self.opts.stderr_flood // len(line) + 1):
                os.write(2, line)  # blocks when nobody drains the pipe
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
        await self._maybe_fail("session/new")
        self._log_request("session/new", mcp_servers)
        rec = {
            "sessionId": f"sess-{uuid.uuid4().hex[:12]}",
            "cwd": cwd,
            "title": None,
            "updatedAt": _now(),
            "mode": "ask",
            "config": {"model": "fast", "verbose": False},
            "history": [],
        }
        self.store.put(rec)
        self.active[rec["sessionId"]] = rec
        self._after_response(rec["sessionId"])
        return NewSessionResponse(session_id=rec["sessionId"], modes=self._modes(rec), config_options=self._config_options(rec))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kw: Any) -> ListSessionsResponse:
        if self.opts.no_list:
            raise RequestError.method_not_found("session/list")
        await self._maybe_fail("session/list")
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
        await self._maybe_fail("session/load")
        self._log_request("session/load", mcp_servers)
        rec = self.store.get(session_id)
        if rec is None:
            raise RequestError.resource_not_found(session_id)
        self._log_load("begin", session_id)
        try:
            await self._load_barrier()
            self.active[session_id] = rec
            # Replay the whole conversation BEFORE answering the request.
            for update in list(rec["history"]):
                await self._send(session_id, update, record=False)
        finally:
            self._log_load("end", session_id)
            async with self.loads_changed:
                self.loads_in_flight -= 1
                self.loads_changed.notify_all()
        self._after_response(session_id)
        return LoadSessionResponse(modes=self._modes(rec), config_options=self._config_options(rec))

    async def _load_barrier(self) -> None:
        """With --load-barrier N, a load answers only once N loads were in flight together
        (a client that serialises loads of different sessions never gets an answer)."""
        async with self.loads_changed:
            self.loads_in_flight += 1
            self.loads_changed.notify_all()
            if self.opts.load_barrier:
                await self.loads_changed.wait_for(lambda: self.loads_in_flight >= self.opts.load_barrier
                                                  or self.barrier_passed)
                self.barrier_passed = True

    async def resume_session(self, session_id: str, cwd: str, mcp_servers: Any = None, additional_directories: Any = None, **kw: Any) -> ResumeSessionResponse:
        if self.opts.no_resume:
            raise RequestError.method_not_found("session/resume")
        await self._maybe_fail("session/resume")
        self._log_request("session/resume", mcp_servers)
        rec = self.store.get(session_id)
        if rec is None:
            raise RequestError.resource_not_found(session_id)
        self.active[session_id] = rec  # no replay for resume
        return ResumeSessionResponse(modes=self._modes(rec), config_options=self._config_options(rec))

    async def close_session(self, session_id: str, **kw: Any) -> CloseSessionResponse:
        self.active.pop(session_id, None)
        ev = self.cancel_events.get(session_id)
        if ev:
            ev.set()
        return CloseSessionResponse()

    async def set_session_mode(self, session_id: str, mode_id: str, **kw: Any) -> SetSessionModeResponse:
        await self._maybe_fail("session/set_mode")
        rec = self._require_active(session_id)
        if mode_id not in {m[0] for m in _session_modes(rec)}:
            raise RequestError.invalid_params({"details": f"unknown mode {mode_id}"})
        rec["mode"] = mode_id
        self._touch(rec)
        await self._send(session_id, {"sessionUpdate": "current_mode_update", "currentModeId": mode_id}, record=False)
        # The "mode" select option mirrors the mode, so tell the client it changed.
        opts = [o.model_dump(mode="json", by_alias=True, exclude_none=True) for o in self._config_options(rec)]
        await self._send(session_id, {"sessionUpdate": "config_option_update", "configOptions": opts}, record=False)
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool, **kw: Any) -> SetSessionConfigOptionResponse:
        await self._maybe_fail("session/set_config_option")
        rec = self._require_active(session_id)
        if config_id == "mode":
            if value not in {m[0] for m in _session_modes(rec)}:
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
        return SetSessionConfigOptionResponse(config_options=self._config_options(rec))

    async def cancel(self, session_id: str, **kw: Any) -> None:
        ev = self.cancel_events.get(session_id)
        if ev is not None:
            ev.set()

    async def prompt(self, session_id: str, prompt: list[Any], **kw: Any) -> PromptResponse:
        await self._maybe_fail("session/prompt")
        rec = self._require_active(session_id)
        text = " ".join(getattr(b, "text", "") or "" for b in prompt).strip()
        low = text.lower()
        cancel = self.cancel_events[session_id] = asyncio.Event()
        delay = self.opts.chunk_delay
        try:
            rec["history"].append({"sessionUpdate": "user_message_chunk", "content": _text(text)})
            if not rec.get("title"):
                rec["title"] = text[:40] or "(empty)"
                await self._send(session_id, {"sessionUpdate": "session_info_update", "title": rec["title"], "updatedAt": _now()}, record=False)
            await self._send(session_id, {"sessionUpdate": "agent_thought_chunk", "content": _text(f"Considering: {text[:30]}")})

            if "tools" in low or "permission" in low:
                tc = f"call-{uuid.uuid4().hex[:8]}"
                await self._send(session_id, {"sessionUpdate": "plan", "entries": [
                    {"content": "Inspect files", "priority": "high", "status": "in_progress"},
                    {"content": "Reply", "priority": "low", "status": "pending"}]})
                await self._send(session_id, {"sessionUpdate": "tool_call", "toolCallId": tc, "title": "Write notes.txt",
                                              "kind": "edit", "status": "pending", "locations": [{"path": f"{rec['cwd']}/notes.txt"}]})
                if "permission" in low:
                    resp = await self.conn.request_permission(
                        session_id=session_id,
                        tool_call=ToolCallUpdate(tool_call_id=tc, title="Write notes.txt", kind="edit", status="pending"),
                        options=[
                            PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
                            PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
                        ],
                    )
                    outcome = resp.outcome
                    if not isinstance(outcome, AllowedOutcome):  # DeniedOutcome == {"outcome":"cancelled"}
                        await self._send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tc, "status": "failed"})
                        return PromptResponse(stop_reason="cancelled")
                    if outcome.option_id == "reject":
                        await self._send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tc, "status": "failed",
                                                      "content": [{"type": "content", "content": _text("Rejected by user")}]})
                    else:
                        await self._send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tc, "status": "completed",
                                                      "content": [{"type": "content", "content": _text("wrote 1 line")}]})
                else:
                    await self._send(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tc, "status": "completed"})
                await self._send(session_id, {"sessionUpdate": "plan", "entries": [
                    {"content": "Inspect files", "priority": "high", "status": "completed"},
                    {"content": "Reply", "priority": "low", "status": "in_progress"}]})

            if "big" in low:
                words = ["x" * 200_000]
            elif "slow" in low:
                words = [f"w{i} " for i in range(50)]
            else:
                words = [w + " " for w in f"Echo: {text}".split()]
            for w in words:
                if cancel.is_set():
                    return PromptResponse(stop_reason="cancelled")
                await self._send(session_id, {"sessionUpdate": "agent_message_chunk", "content": _text(w)})
                if delay:
                    try:
                        await asyncio.wait_for(cancel.wait(), timeout=delay)
                    except TimeoutError:
                        pass
            if cancel.is_set():
                return PromptResponse(stop_reason="cancelled")
            used = sum(len(json.dumps(u)) for u in rec["history"]) // 4
            await self._send(session_id, {"sessionUpdate": "usage_update", "used": used, "size": 200_000}, record=False)
            return PromptResponse(stop_reason="end_turn")
        finally:
            self.cancel_events.pop(session_id, None)
            if session_id in self.active:
                self._touch(rec)


def _methods(text: str | None) -> set[str]:
    return {m.strip() for m in (text or "").split(",") if m.strip()}


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
    asyncio.run(run_agent(TestAgent(opts), use_unstable_protocol=True))


if __name__ == "__main__":
    main(sys.argv[1:])

"""The ACP driver: any agent that speaks the Agent Client Protocol, over the ACP SDK.

One agent process per started driver, spawned from the source's `command` in its `cwd`
with its `env` (see `acp_process`), spoken to by the SDK's client connection on a private
event loop (`acp_loop`); every public method blocks. Start-up initializes with the SDK's
protocol version and fails, stopping the agent once, when the agent does not advertise
both `session/list` and `session/load`.

Inventory passes the agent's cursors through (`session/list`, no directory filter). A read
is a `session/load`: every `session/update` the agent sends for that session until the
load's answer is one native event, in order (`acp_updates`). Loads of one session run one
at a time (notifications name only the session, not the load), loads of different
sessions together. Modes and configuration options are learned per session from the
answers that carry them and published as the source's capabilities (`acp_controls`);
given a state directory, the driver keeps them there between runs
(`acp_controls_book`), so a run that reads no session still publishes them.
Commands are in `acp_commands`.

Nothing here has an elapsed-time limit: a call ends with the agent's answer, the agent's
exit, the start-up signal, or `stop()`.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any, TypeVar

from lib.drivers.acp_commands import AcpCommands, PromptState
from lib.drivers.acp_connection import AgentConnection
from lib.drivers.acp_controls import SessionControls
from lib.drivers.acp_controls_book import ControlsBook
from lib.drivers.acp_loop import LoopClosed, LoopThread
from lib.drivers.acp_process import agent_environment
from lib.drivers.acp_updates import UpdateLog, snapshot_from_load, summary_from_info
from lib.drivers.base import AgentDriver, Cancelled, CancelSignal, DriverError, DriverUnavailable
from lib.drivers.child_channels import report_provider_output
from lib.errors import ExitCode
from lib.types import (
    AgentSourceConfig,
    DriverCapabilities,
    NativeSessionSnapshot,
    SessionPage,
    SessionSummary,
)

_T = TypeVar("_T")


class AcpConfigError(DriverError):
    """A source this driver cannot serve as configured (a usage error, exit 2)."""

    exit_code = ExitCode.USAGE


def _client_version() -> str:
    try:
        return metadata.version("agentctl")
    except metadata.PackageNotFoundError:
        return "0.0.0"


class AcpDriver(AcpCommands, AgentDriver):
    driver_kind = "acp"

    def __init__(self, config: AgentSourceConfig) -> None:
        if not config.command:
            raise AcpConfigError("missing-command",
                                 f"source {config.id.strip().lower()} uses the acp driver but has no 'command': "
                                 'give the agent program and its arguments, e.g. command = ["my-agent", "--acp"]')
        super().__init__(config)
        self.name = f"acp (source {self.source.id})"
        self._lock = threading.Lock()
        self._loop: LoopThread | None = None
        self._connection: AgentConnection | None = None
        self._stopped = False
        self.updates = UpdateLog()
        self.controls = SessionControls()
        self.resume_supported = False
        self._infos: dict[str, Any] = {}  # listed SessionInfo by agent session id
        self._cwds: dict[str, str] = {}  # directories of sessions this driver started
        self._walk: set[str] | None = None  # ids of the inventory walk under way
        self._load_locks: dict[str, asyncio.Lock] = {}  # used on the loop thread only
        self._opened: set[str] = set()  # sessions loaded, resumed or made in this agent process
        self._prompts: dict[str, PromptState] = {}  # connector-owned prompts by agent session id
        self._started_as: dict[str, str] = {}  # caller's id of a start -> the agent's id

    @classmethod
    def initial_capabilities(cls) -> DriverCapabilities:
        return DriverCapabilities(list_sessions=True, read_session=True, prompt=True, cancel=True,
                                  set_mode=True, set_config_option=True, start_session=True)

    # -- lifecycle -------------------------------------------------------------------

    def start(self, signal: CancelSignal | None = None) -> None:
        with self._lock:
            if self._loop is not None or self._stopped:
                raise DriverError("already-started", f"the driver of source {self.source.id} was started before")
            self._loop = LoopThread(f"agentctl-acp-{self.source.id}")
        try:
            self._keep_controls()
        except BaseException:
            self.stop()
            raise
        connection = AgentConnection(self.name, on_update=self.updates.record, on_sent=self._sent,
                                     on_answered=self.updates.answered)
        self._connection = connection
        argv = list(self.config.command or [])
        try:
            init = self._loop.run(connection.open(
                argv, agent_environment(self.config.env), self.config.cwd, self.config.max_line_bytes,
                _client_version()), signal)
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            self.stop()
            what = "no such program or directory" if not isinstance(exc, PermissionError) else "not executable"
            raise DriverUnavailable("program-not-found",
                                    f"cannot run {argv[0]!r} in {self.config.cwd or 'the current directory'}: "
                                    f"{what} (source {self.source.id})") from None
        except Cancelled:
            self.stop()
            raise
        except DriverError as exc:
            self.stop()
            report_provider_output(self.name, exc.detail)
            raise DriverError("start-failed", f"{exc.message} while starting", detail=exc.detail) from None
        except BaseException:  # Cancelled by the signal, an interrupt: the agent goes
            self.stop()
            raise
        capabilities = init.agent_capabilities
        sessions = capabilities.session_capabilities if capabilities is not None else None
        missing = [name for name, present in (
            ("session/list", sessions is not None and sessions.list is not None),
            ("session/load", capabilities is not None and bool(capabilities.load_session)),
        ) if not present]
        if missing:
            self.stop()
            raise DriverUnavailable(
                "agent-lacks-sessions",
                f"{self.name} does not advertise {' and '.join(missing)}, which agentctl needs to list and "
                f"read its sessions; use an agent that supports them or disable the source",
            )
        self.resume_supported = sessions is not None and sessions.resume is not None
        self._authenticate(init, signal)
        info = init.agent_info
        self.source.provider_version = info.version if info is not None else None

    def _keep_controls(self) -> None:
        """With a state directory: the controls earlier runs learned are known (and
        published) from the start, and what this run learns is kept for the next."""
        if self.state_directory is None:
            return
        book = ControlsBook.open(self.state_directory(), self.source.id)
        if book is not None:
            self.controls.keep_in(book)
            self.publish_controls()

    def _authenticate(self, init: Any, signal: CancelSignal | None) -> None:
        """Agents that gate every session call behind `authenticate` (codex-acp) are
        authenticated with the first `env_var` method whose variables the source's `env`
        sets: the source configured that credential for this agent. Otherwise nothing is
        sent, and an agent that needs more answers the calls with its own error."""
        for method in init.auth_methods or []:
            variables = [var.name for var in getattr(method, "vars", None) or []]
            if getattr(method, "type", None) == "env_var" and variables and all(
                    self.config.env.get(name) for name in variables):
                try:
                    self._run(self._call(lambda conn, mid=method.id: conn.authenticate(method_id=mid)), signal)
                except DriverError as exc:
                    self.stop()
                    raise DriverError("start-failed", f"{exc.message} while authenticating with {method.id}",
                                      detail=exc.detail) from None
                return

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            loop, self._loop = self._loop, None
        if loop is not None:
            connection = self._connection
            loop.close(connection.close() if connection is not None else None)
        self.controls.close()

    def _run(self, coroutine: Awaitable[_T], signal: CancelSignal | None = None) -> _T:
        """Run a coroutine on the driver's loop, blocking; `driver-stopped` once stopped."""
        loop = self._loop
        if loop is None:
            coroutine.close()  # type: ignore[attr-defined]
            if self._stopped:
                raise DriverError("driver-stopped", f"the driver of source {self.source.id} was stopped")
            raise DriverError("driver-not-started", f"the driver of source {self.source.id} was not started")
        try:
            return loop.run(coroutine, signal)  # type: ignore[arg-type]
        except LoopClosed:
            raise DriverError("driver-stopped", f"the driver of source {self.source.id} was stopped") from None

    async def _call(self, request: Callable[[Any], Awaitable[_T]]) -> _T:
        """One SDK request on the loop (see `AgentConnection.call`)."""
        connection = self._connection
        if connection is None:
            raise DriverError("driver-not-started", f"the driver of source {self.source.id} was not started")
        return await connection.call(request)

    # -- inventory and reads ---------------------------------------------------------

    def list_sessions(self, cursor: str | None = None) -> SessionPage:
        response = self._run(self._call(lambda conn: conn.list_sessions(cursor=cursor)))
        owned = self._owned_sessions()
        started = self._callers_by_agent_id()
        with self._lock:
            if cursor is None:
                self._walk = set()
            for info in response.sessions:
                self._infos[info.session_id] = info
                if self._walk is not None:
                    self._walk.add(info.session_id)
            complete = self._walk if response.next_cursor is None else None
            if response.next_cursor is None:
                self._walk = None
        if complete is not None:
            # A completed inventory: controls of sessions it no longer lists are forgotten
            # (sessions in use by this driver are kept).
            self.controls.forget_unlisted(complete, keep=set(owned) | set(self._started_as.values()))
            self.publish_controls()
        sessions = [summary_from_info(info, started_as=started.get(info.session_id),
                                      active=True if info.session_id in owned else None)
                    for info in response.sessions]
        return SessionPage(sessions=sessions, next_cursor=response.next_cursor)

    def read_session(self, native_session_id: str) -> NativeSessionSnapshot:
        session_id = self.agent_session_id(native_session_id)
        with self._lock:
            prompting = session_id in self._prompts  # sampled as the read starts
        info = self._info(session_id)
        cwd = self.session_cwd(session_id, info)
        active = True if prompting else None
        if prompting:
            # No session/load in the middle of the agent's turn: what the turn sent so far.
            events, complete = self.updates.watched(session_id), False
        else:
            events, complete = self._run(self.load(session_id, cwd)), True
        if info is not None:
            summary = summary_from_info(info, active=active)
        else:
            summary = SessionSummary(native_session_id=session_id, cwd=cwd, active=active)
        started = self._callers_by_agent_id().get(session_id)
        summary = summary.model_copy(update={"started_as": started})
        return snapshot_from_load(summary, events, complete=complete)

    async def load(self, session_id: str, cwd: str) -> list[dict[str, Any]]:
        """`session/load` of one session, one at a time per session: the updates it
        brought, in order; the session's controls learned from the answer."""
        lock = self._load_locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            recording = self.updates.begin(session_id)
            try:
                response = await self._call(lambda conn: conn.load_session(
                    cwd=cwd, session_id=session_id, mcp_servers=[]))
            finally:
                self.updates.end(session_id)
        self.controls.learn(session_id, response)
        self._opened.add(session_id)
        self.publish_controls()
        return recording

    def publish_controls(self) -> None:
        """The learned controls as the source's capabilities (read by publication)."""
        modes, options = self.controls.published()
        self.source.capabilities.modes = modes
        self.source.capabilities.config_options = options

    # -- what commands share ---------------------------------------------------------

    def agent_session_id(self, native_session_id: str) -> str:
        """The agent's id of a session: a start's caller-chosen id maps to the id the
        agent gave it; any other id is the agent's own."""
        with self._lock:
            return self._started_as.get(native_session_id, native_session_id)

    def session_cwd(self, session_id: str, info: Any | None = None) -> str:
        info = info if info is not None else self._info(session_id)
        if info is not None:
            return info.cwd
        with self._lock:
            if session_id in self._cwds:
                return self._cwds[session_id]
        if self.config.cwd:
            return os.path.abspath(os.path.expanduser(self.config.cwd))
        raise DriverError("session-not-found",
                          f"{self.name} does not list a session {session_id} and the source has no cwd to load it in")

    def _info(self, session_id: str) -> Any | None:
        """The session's listing: known from an earlier page, else found by listing."""
        with self._lock:
            if session_id in self._infos or session_id in self._cwds:
                return self._infos.get(session_id)
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            response = self._run(self._call(lambda conn, cursor=cursor: conn.list_sessions(cursor=cursor)))
            with self._lock:
                for info in response.sessions:
                    self._infos[info.session_id] = info
                if session_id in self._infos:
                    return self._infos[session_id]
            cursor = response.next_cursor
            if cursor is None or cursor in seen:
                return None
            seen.add(cursor)

    def _owned_sessions(self) -> set[str]:
        with self._lock:
            return {sid for sid, prompt in self._prompts.items() if prompt.sent}

    def _callers_by_agent_id(self) -> dict[str, str]:
        with self._lock:
            return {agent: caller for caller, agent in self._started_as.items()}

    def _sent(self, message: dict[str, Any]) -> None:
        """Every message written to the agent (on the loop thread): a prompt has started
        once its `session/prompt` is written."""
        if message.get("method") != "session/prompt":
            return
        params = message.get("params") or {}
        with self._lock:
            prompt = self._prompts.get(params.get("sessionId"))
        if prompt is not None:
            prompt.mark_sent()

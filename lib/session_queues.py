"""The command worker's scheduling: one FIFO per session on a bounded pool, gated cancels.

Commands other than `cancel` run in admission order for each (source, native session);
different sessions run concurrently, at most `max_sessions` at once. A session's queue
runs one command per pool turn and then goes to the back of the pool's queue, so one
busy session cannot keep the others waiting.

A `cancel` never enters a session queue. It waits for the gate of the earliest admitted
`prompt` or `start` of its session that had not reached its terminal outcome when the
cancel was admitted: the gate opens when that command's driver reports
`on_cancellation_ready`, or when the command ends without reporting it. The cancel then
runs at once on a thread of its own (bypassing the queue and the pool, which may be full
of the very prompts it is meant to stop). A cancel with nothing to wait for runs at once.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from lib.commands import AgentSessionCommand

GATED_TYPES = frozenset({"prompt", "start"})
# Sessions whose commands run at once. A prompt holds its thread for as long as the
# agent works (minutes), so the pool is wide: a person with many sessions should not see
# one wait for another's prompt; the threads mostly wait on providers and the disk.
DEFAULT_MAX_SESSIONS = 64
SessionKey = tuple[str, str]


@dataclass(eq=False)
class CommandTask:
    """One admitted command and the queue it came from. `ready` is its cancellation gate."""

    command: AgentSessionCommand
    producer: str | None
    ready: threading.Event = field(default_factory=threading.Event)

    @property
    def session(self) -> SessionKey:
        return (self.command.source_id, self.command.native_session_id)


@dataclass
class _Session:
    queue: deque[CommandTask] = field(default_factory=deque)
    running: bool = False
    open_gates: list[CommandTask] = field(default_factory=list)  # prompts/starts not yet terminal

    @property
    def idle(self) -> bool:
        return not self.queue and not self.running and not self.open_gates


class SessionQueues:
    """Runs `run(task)` for every admitted task under the ordering rules above. `run` is
    expected to handle its own errors; the task's gate opens when it returns or raises."""

    def __init__(
        self, run: Callable[[CommandTask], None], *, max_sessions: int = DEFAULT_MAX_SESSIONS
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self._run = run
        self._pool = ThreadPoolExecutor(max_workers=max_sessions, thread_name_prefix="agentctl-session")
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._sessions: dict[SessionKey, _Session] = {}
        self._outstanding = 0
        self._cancels: set[threading.Thread] = set()

    def admit(self, task: CommandTask) -> None:
        with self._lock:
            self._outstanding += 1
            key = task.session
            session = self._sessions.setdefault(key, _Session())
            if task.command.type == "cancel":
                gate = session.open_gates[0].ready if session.open_gates else None
                if session.idle:
                    del self._sessions[key]
                thread = threading.Thread(
                    target=self._run_cancel, args=(task, gate), name=f"agentctl-cancel-{task.command.id}", daemon=True
                )
                self._cancels.add(thread)
                thread.start()
                return
            session.queue.append(task)
            if task.command.type in GATED_TYPES:
                session.open_gates.append(task)
            if not session.running:
                session.running = True
                self._pool.submit(self._step, key)

    def _step(self, key: SessionKey) -> None:
        with self._lock:
            session = self._sessions[key]
            task = session.queue.popleft()
        try:
            self._run(task)
        finally:
            task.ready.set()
            with self._lock:
                if task in session.open_gates:
                    session.open_gates.remove(task)
                if session.queue:
                    self._pool.submit(self._step, key)
                else:
                    session.running = False
                    if session.idle:
                        self._sessions.pop(key, None)
                self._finished()

    def _run_cancel(self, task: CommandTask, gate: threading.Event | None) -> None:
        try:
            if gate is not None:
                gate.wait()  # the package imposes no elapsed-time limit on provider work
            self._run(task)
        finally:
            with self._lock:
                self._cancels.discard(threading.current_thread())
                self._finished()

    def _finished(self) -> None:  # under the lock
        self._outstanding -= 1
        if self._outstanding == 0:
            self._idle.notify_all()

    def wait_idle(self) -> None:
        """Wait until every admitted task has run."""
        with self._idle:
            while self._outstanding:
                self._idle.wait()

    def close(self) -> None:
        """Wait for admitted work, then stop the pool's threads."""
        self.wait_idle()
        self._pool.shutdown(wait=True)
        with self._lock:
            cancels = list(self._cancels)
        for thread in cancels:
            thread.join()

"""The first pages of a Codex listing, asked by the idle fast path's early start.

The Codex the fast path starts (codex_early.py) used to wait, started, for the normal
path to import click, pydantic, the store and the stages (about 0.5 s quiet, 0.8 s
loaded at 300 threads) before anyone asked it anything. Here a thread of the fast
path's asks at once: `initialize` (and `initialized`) as soon as Codex runs, then, once
`allow_listing` says the source's observation sequence is allocated (a listing follows
its sequence, lib/pipeline/idle_early_start.py), each `thread/list` page with exactly
the driver's parameters (codex_list_params.py), following the cursors, until the
answers held reach `BUDGET` bytes as Codex sent them, the listing ends, or the driver
takes the child (`hand_over`). Standard library only.

`hand_over` stops the chain after the page in flight and gives the driver everything:
the `initialize` answer, the pages answered, and the child with its stdout as the
transport must read it next (whatever arrived that was not an answer of ours, a
notification, is read again first). A child whose early exchange went wrong (an error
answer to `initialize`, a line that is not JSON, the child gone) is not handed over:
the driver starts its own and sees for itself what is wrong.
"""

from __future__ import annotations

import json
import threading

from lib.drivers.child_output import LineReader, LineTooLong
from lib.drivers.codex_list_params import initialize_params, list_params, page_follows

TYPE_CHECKING = False  # typing itself is not imported on the fast path
if TYPE_CHECKING:
    import subprocess
    from typing import Any

BUDGET = 1 << 20  # answer bytes held before the chain waits for the driver (codex_list_ahead.BUDGET)
PAGE_SIZE = 100  # codex_app_server.PAGE_SIZE: pages of another size are not given to the driver
LINE_LIMIT = 64 << 20  # a longer line is not a page of ours: the driver reads that child itself
FIRST_ID = 1 << 40  # request ids the transport never reaches (it counts from 1)


class EarlyPage:
    """One `thread/list` page answered before the driver took the child: its answer's
    line as received (`raw`), parsed again when the collection takes it (issue 14 goal 4:
    parsed, the up to BUDGET bytes held through the publication's opening were about five
    times as many bytes of small objects)."""

    __slots__ = ("cursor", "params", "raw", "size")

    def __init__(self, cursor: str | None, params: dict[str, Any], raw: bytes, size: int) -> None:
        self.cursor, self.params, self.raw, self.size = cursor, params, raw, size


class EarlyListing:
    """The early exchange with one child (see the module's docstring)."""

    def __init__(self, process: subprocess.Popen[bytes], client_version: str, *, budget: int = BUDGET) -> None:
        self.process = process
        self.client_version = client_version
        self.budget = budget
        self.initialized: dict[str, Any] | None = None  # the `initialize` answer, once answered
        self.pages: list[EarlyPage] = []
        self.broken = False  # the exchange went wrong: the child is not handed over
        self._reader = LineReader(process.stdout, LINE_LIMIT)
        self._others: list[bytes] = []  # lines that were not our answers, for the transport
        self._listing = threading.Event()  # the sequence is allocated: the pages may be asked
        self._stop = threading.Event()
        self._next_id = FIRST_ID
        self._initialize = 0  # the request ids of `initialize` and of the first page, once asked
        self._first: int | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="codex early listing")

    def start(self) -> None:
        """`initialize` is sent now (on the caller's thread, the first to write); the
        thread reads the answers."""
        try:
            self._initialize = self._send("initialize", initialize_params(self.client_version))
        except (OSError, ValueError):
            self.broken = True
            return
        self._thread.start()

    def allow_listing(self) -> None:
        """The source's observation sequence is allocated: the first page is asked now,
        on the caller's thread (Codex answers it once `initialize` is answered); the
        thread follows the cursors from there."""
        try:
            self._write({"jsonrpc": "2.0", "method": "initialized"})
            self._first = self._send("thread/list", list_params(None, PAGE_SIZE)[1])
        except (OSError, ValueError):
            self.broken = True
            self._stop.set()
        self._listing.set()

    def no_listing(self) -> None:
        """No sequence was allocated for it: `initialize` only, the driver lists."""
        self._stop.set()
        self._listing.set()

    def hand_over(self, timeout: float | None) -> tuple[dict[str, Any], list[EarlyPage]] | None:
        """Stop after the page in flight, and give (`initialize` answer, pages); the
        child's stdout then yields what the transport has not seen. None when the
        exchange went wrong or did not end within `timeout` seconds (the caller ends
        the child)."""
        self._stop.set()
        self._listing.set()
        if self._thread.ident is not None:  # started (a failed `initialize` write never starts it)
            self._thread.join(timeout)
        if self._thread.is_alive() or self.broken or self.initialized is None:
            return None
        unread = b"".join(line + b"\n" for line in self._others) + self._reader.unread()
        if unread:
            self.process.stdout = _Replay(unread, self.process.stdout)  # type: ignore[assignment]
        return self.initialized, self.pages

    # -- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._listing.wait()  # until then the caller may write (`allow_listing`); from then on, this thread
            if self.broken:
                return
            answer = self._answer(self._initialize)
            if not isinstance(answer, tuple) or not isinstance(answer[0], dict) or not answer[0]:
                self.broken = True
                return
            if self._first is None:
                self._write({"jsonrpc": "2.0", "method": "initialized"})
            self.initialized = answer[0]
            if self._first is not None:
                self._list(self._first)
        except (OSError, ValueError, LineTooLong):
            self.broken = True

    def _list(self, asked: int) -> None:
        """The pages from the first (asked already, as `asked`), following the cursors."""
        cursor: str | None = None
        seen: set[str | None] = {None}
        held = 0
        while True:
            archived, params = list_params(cursor, PAGE_SIZE)
            answered = self._answer(asked)
            if answered is None or not isinstance(answered[0], dict):
                return  # an error answer: the driver asks this page itself, and sees it
            result, size, line = answered
            self.pages.append(EarlyPage(cursor, params, line, size))
            held += size
            cursor = page_follows(archived, result)
            del result
            if cursor is None or cursor in seen or self._stop.is_set() or held >= self.budget:
                return
            seen.add(cursor)
            asked = self._send("thread/list", list_params(cursor, PAGE_SIZE)[1])

    def _send(self, method: str, params: dict[str, Any]) -> int:
        request_id = self._next_id
        self._next_id += 1
        self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def _answer(self, request_id: int) -> tuple[Any, int, bytes] | None:
        """(result, answer bytes, the answer's line) of request `request_id`; None for an error answer.
        Raises ValueError when the child ends or sends what is not JSON."""
        while True:
            line = self._reader.readline()
            if line is None:
                raise ValueError("the child's output ended")
            if not line or line.isspace():
                continue
            message = json.loads(line)
            if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                return None if "error" in message else (message.get("result"), len(line), line)
            self._others.append(line)  # a notification (or a request): the transport's to handle

    def _write(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n")
        stdin.flush()


class _Replay:
    """The child's stdout with `unread` bytes before it (what the early exchange read and
    did not use): the transport reads through `read1`."""

    def __init__(self, unread: bytes, stream: Any) -> None:
        self._unread = unread
        self._stream = stream

    def read1(self, size: int = -1) -> bytes:
        if self._unread:
            size = len(self._unread) if size < 0 else size
            data, self._unread = self._unread[:size], self._unread[size:]
            return data
        return self._stream.read1(size)

    def __getattr__(self, name: str) -> Any:  # close, fileno, ...: the stream's
        return getattr(self._stream, name)

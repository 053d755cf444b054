"""Providers that hang, flood or never end a line (issue 9, item 10).

Collection calls (start-up, inventory pages, reads) fail with `provider-stalled` when
nothing at all arrives for the source's stall timeout, and any message longer than its
line limit fails with `line-too-long` without being held whole; either ends the child.
Prompts keep no elapsed-time limit. The faults come from `tests/support/fake_codex_child.py`
with small limits (1 MiB lines, a stall timeout of a second or two); the stall tests wait
for that timeout, and assert no elapsed times.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
import tracemalloc
from collections.abc import Iterator

import pytest

from lib.drivers.base import DriverError
from lib.drivers.child_output import READ_SIZE, LineReader, LineTooLong
from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.drivers.jsonrpc_transport import JsonRpcTransport, TransportClosed
from lib.drivers.websocket_pipe import WebSocketPipe
from lib.types import AgentSourceConfig, PromptInput
from tests.support.fake_codex_child import child_argv
from tests.support.processes import gone, poll

MIB = 1024 * 1024
GUARD_SECONDS = 60  # far above any fault here: reaching it means the call hung (today's fault)


class EndlessLine:
    """A child's output that is one line without end; counts what was taken from it."""

    def __init__(self, prefix: bytes = b'{"id": 1, "result": "') -> None:
        self.taken = 0
        self._prefix = prefix

    def read1(self, size: int = READ_SIZE) -> bytes:
        data, self._prefix = self._prefix, b""
        data += b"x" * (size - len(data))
        self.taken += len(data)
        return data


class Chunks:
    """A child's output given in the chunks listed, then its end."""

    def __init__(self, *chunks: bytes) -> None:
        self._chunks = list(chunks)

    def read1(self, size: int = READ_SIZE) -> bytes:
        return self._chunks.pop(0) if self._chunks else b""


def outcome_of(target, *args, **kwargs) -> dict:
    """Run `target` on a thread and give its value or error; `hung` if it never returned."""
    outcome: dict = {}

    def body() -> None:
        try:
            outcome["value"] = target(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            outcome["error"] = exc

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(GUARD_SECONDS)
    outcome["hung"] = thread.is_alive()
    return outcome


@pytest.fixture
def transport() -> Iterator[JsonRpcTransport]:
    transport = JsonRpcTransport(name="fake child", max_line_bytes=MIB)
    try:
        yield transport
    finally:
        transport.stop()


def fake_source(mode: str, **settings) -> AgentSourceConfig:
    return AgentSourceConfig(id="broken", driver="codex-app-server", command=child_argv(mode),
                             max_line_bytes=MIB, **settings)


def started(driver: CodexAppServerDriver, stall_timeout: float) -> CodexAppServerDriver:
    """The driver started under its source's (generous) stall timeout, then given a short
    one: a fake child slow to start on a loaded machine must not stall the start-up."""
    driver.start()
    driver.stall_timeout = stall_timeout
    return driver


def warmed_up(transport: JsonRpcTransport) -> JsonRpcTransport:
    """The child has answered once: it is up and reading, however loaded the machine."""
    assert transport.request("env/get")["cwd"]
    return transport


def assert_child_ended(transport: JsonRpcTransport) -> None:
    process = transport._run.process if transport._run else None  # the failed run keeps its child
    assert process is not None
    process.wait(timeout=GUARD_SECONDS)  # killed: it ends at once (a guard, not a sleep)


# -- a line without end ---------------------------------------------------------------------


def test_flood_line_reader_gives_up_past_its_limit_having_held_at_most_the_limit_and_one_read():
    stream = EndlessLine()
    reader = LineReader(stream, MIB)
    with pytest.raises(LineTooLong) as caught:
        reader.readline()
    assert caught.value.limit == MIB
    assert MIB < stream.taken <= MIB + READ_SIZE  # read just past the limit, never the whole line
    assert reader.held == 0  # and what it held is let go


def test_flood_line_reader_takes_a_line_of_exactly_the_limit_and_refuses_one_byte_more():
    limit = 1024
    exact, over = b"a" * limit + b"\n", b"b" * (limit + 1) + b"\n"
    reader = LineReader(Chunks(exact[:100], exact[100:] + over[:10], over[10:]), limit)
    assert reader.readline() == b"a" * limit
    with pytest.raises(LineTooLong):
        reader.readline()
    in_one_read = LineReader(Chunks(b"d" * (limit + 1) + b"\n"), limit)  # whole in one read, too
    with pytest.raises(LineTooLong):
        in_one_read.readline()


def test_flood_line_reader_splits_lines_across_reads_and_keeps_a_last_line_without_newline():
    reader = LineReader(Chunks(b'{"a": 1}\n{"b"', b': 2}\n\n{"c"', b"", b': 3}'), 1024)
    assert [reader.readline() for _ in range(4)] == [b'{"a": 1}', b'{"b": 2}', b"", b'{"c"']
    assert [reader.readline() for _ in range(2)] == [None, None]  # an empty read is the end


def test_flood_websocket_message_past_the_limit_is_refused_having_held_at_most_the_limit():
    class Peer:
        """The proxy's side: answers the upgrade, then sends one endless text frame."""

        def __init__(self) -> None:
            self.sent, self.flood = b"", EndlessLine(prefix=b"")

        def write(self, data: bytes) -> None:
            self.sent += data

        def flush(self) -> None:
            pass

        def read1(self, size: int = READ_SIZE) -> bytes:
            if self.sent.startswith(b"GET ") and b"\r\n\r\n" in self.sent:
                key = next(line.split(b":", 1)[1].strip() for line in self.sent.split(b"\r\n")
                           if line.lower().startswith(b"sec-websocket-key"))
                self.sent = b""
                accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
                return (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
                        + bytes([0x81, 127]) + (64 * MIB).to_bytes(8, "big"))  # a 64 MiB text frame
            return self.flood.read1(size)

    peer = Peer()
    pipe = WebSocketPipe(peer, peer, max_message_bytes=MIB)  # type: ignore[arg-type]
    pipe.handshake()
    with pytest.raises(LineTooLong):
        pipe.receive()
    assert MIB < peer.flood.taken <= MIB + READ_SIZE


def test_flood_child_fails_the_call_with_line_too_long_ends_the_child_and_spends_no_memory(transport):
    """The child writes 16 MiB of one line without a newline; the limit is 1 MiB."""
    transport.start(child_argv("flood"))
    tracemalloc.start()
    try:
        outcome = outcome_of(transport.request, "thread/list")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not outcome["hung"], "the call hung on a line that never ends"
    error = outcome["error"]
    assert isinstance(error, TransportClosed) and error.code == "line-too-long"
    assert "1048576 bytes (1 MiB)" in error.message and error.sent
    assert peak < 3 * MIB, f"{peak} bytes were held for a 1 MiB limit"
    assert_child_ended(transport)


def test_flood_source_fails_listing_with_line_too_long_naming_the_setting():
    driver = CodexAppServerDriver(fake_source("flood"))
    try:
        driver.start()
        outcome = outcome_of(driver.list_sessions)
        assert not outcome["hung"]
        error = outcome["error"]
        assert isinstance(error, DriverError) and error.code == "line-too-long"
        assert "source broken" in error.message and "maxLineBytes" in error.message
        assert_child_ended(driver.transport)
    finally:
        driver.stop()


# -- silence ----------------------------------------------------------------------------------


def test_never_ends_line_child_stalls_the_call_which_fails_with_provider_stalled(transport):
    """Half a line, then nothing: the reader waits for the rest, the stall clock runs out."""
    transport.start(child_argv("never-ends-line"))
    warmed_up(transport)
    outcome = outcome_of(transport.request, "thread/list", stall_timeout=1)
    assert not outcome["hung"], "the call hung on a line that never ends"
    error = outcome["error"]
    assert isinstance(error, TransportClosed) and error.code == "provider-stalled"
    assert "thread/list" in error.message
    assert_child_ended(transport)
    with pytest.raises(TransportClosed) as later:  # the run is over: every later call says why
        transport.request("thread/read", stall_timeout=1)
    assert later.value.code == "provider-stalled"


def test_hang_source_starts_then_fails_listing_with_provider_stalled_naming_the_setting():
    driver = CodexAppServerDriver(fake_source("hang"))
    try:
        started(driver, stall_timeout=1)  # initialize is answered
        outcome = outcome_of(driver.list_sessions)
        assert not outcome["hung"], "listing hung on a provider that never answers"
        error = outcome["error"]
        assert isinstance(error, DriverError) and error.code == "provider-stalled"
        assert "source broken" in error.message and "stallTimeoutSeconds" in error.message
        assert_child_ended(driver.transport)
    finally:
        driver.stop()


def test_hang_read_source_lists_then_fails_the_read_with_provider_stalled():
    driver = CodexAppServerDriver(fake_source("hang-read"))
    try:
        started(driver, stall_timeout=1)
        assert [s.native_session_id for s in driver.list_sessions().sessions] == ["thread-1"]
        outcome = outcome_of(driver.read_session, "thread-1")
        assert not outcome["hung"]
        assert isinstance(outcome["error"], DriverError) and outcome["error"].code == "provider-stalled"
    finally:
        driver.stop()


def test_silent_source_start_fails_with_provider_stalled_not_a_hang():
    driver = CodexAppServerDriver(fake_source("silent", stall_timeout_seconds=1))
    outcome = outcome_of(driver.start)
    assert not outcome["hung"], "start hung on a provider that never answers initialize"
    error = outcome["error"]
    assert isinstance(error, DriverError) and error.code == "provider-stalled"
    assert not driver.transport.running and driver.transport.pid is None


def test_a_stall_timeout_counts_from_the_last_arrival_so_a_chatty_slow_answer_is_not_stalled(transport):
    """650 notifications before the answer: each one restarts the clock."""
    transport.start(child_argv())
    answer = transport.request("notify/many", {"count": 650}, stall_timeout=5)
    assert answer["echo"] == "notify/many"


def test_a_prompt_has_no_stall_limit_it_waits_past_the_timeout_until_stopped():
    """`turn/start` is never answered and nothing arrives: the prompt waits on, far past the
    stall timeout, and ends only when the driver stops (outcome unknown, it was sent)."""
    driver = started(CodexAppServerDriver(fake_source("hang-turn-start")), stall_timeout=0.2)
    try:
        hanging = threading.Event()
        driver.transport.on_notification = lambda note: note["method"] == "test/hanging" and hanging.set()
        result: dict = {}
        thread = threading.Thread(target=lambda: result.update(r=driver.prompt("t", PromptInput(text="hi"))))
        thread.start()
        assert hanging.wait(GUARD_SECONDS)
        thread.join(1.0)  # five stall timeouts of silence: a negative check, not a synchronisation
        assert thread.is_alive(), "the prompt was ended by a stall timeout"
    finally:
        driver.stop()
    thread.join(GUARD_SECONDS)
    assert result["r"].status == "unknown" and result["r"].error.code == "transport-lost"


# -- what the child started -------------------------------------------------------------------


@pytest.mark.parametrize("ending", ["stall", "stop"])
def test_hang_child_ends_with_what_it_started_whether_a_stall_or_a_stop_ends_it(transport, tmp_path, ending):
    pid_file = tmp_path / "pids"
    transport.start(child_argv("hang"), env={**os.environ, "FAKE_CODEX_PID_FILE": str(pid_file)})
    warmed_up(transport)
    if ending == "stall":
        outcome = outcome_of(transport.request, "thread/list", stall_timeout=1)
        assert outcome["error"].code == "provider-stalled"
    else:
        thread = threading.Thread(target=lambda: outcome_of(transport.request, "thread/list"), daemon=True)
        thread.start()
        poll(pid_file.exists, "the child's fault to begin")
        transport.stop()
    child, grandchild = (int(pid) for pid in pid_file.read_text().split())
    poll(lambda: gone(child) and gone(grandchild), "the child and its grandchild to end")

"""The JSON-RPC line transport, against a small fake child process.

Every test here uses `tests/support/fake_codex_child.py`: the faults (a child dying in the
middle of a request, a malformed line, a stderr flood) are ones the real Codex cannot be
made to show on demand. The real Codex runs through the same transport in the driver tests.
"""

from __future__ import annotations

import threading
from signal import SIGKILL

import pytest

from lib.drivers.base import Cancelled, CancelSignal
from lib.drivers.child_channels import DETAIL_BYTE_LIMIT, STDERR_TAIL_LINES, provider_output
from lib.drivers.jsonrpc_transport import JsonRpcTransport, RpcError, TransportClosed
from tests.support.fake_codex_child import child_argv


def run_in_thread(target, *args, **kwargs) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def body() -> None:
        try:
            outcome["value"] = target(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            outcome["error"] = exc

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, outcome


def test_fake_child_sees_increasing_integer_ids_and_params_on_every_request(transport):
    transport.start(child_argv())
    first = transport.request("first/call", {"a": 1})
    second = transport.request("second/call")
    assert (first["id"], first["params"]) == (1, {"a": 1})
    assert (second["id"], second["params"]) == (2, {})


def test_fake_child_notification_that_arrives_before_its_waiter_still_satisfies_it(transport):
    transport.start(child_argv())
    transport.request("notify/me")  # the child sends the notification before this answer
    note = transport.wait_for_notification(lambda n: n["method"] == "test/notified")
    assert note["params"] == {"for": 1}


def test_fake_child_only_the_newest_500_notifications_are_retained(transport):
    transport.start(child_argv())
    transport.request("notify/many", {"count": 650})
    retained = transport.retained_notifications()
    assert len(retained) == 500
    assert [n["params"]["n"] for n in retained] == list(range(150, 650))


def test_fake_child_server_request_with_id_zero_is_answered_by_the_handler(transport):
    seen = []

    def handler(method, params):
        seen.append((method, params))
        return {"decision": "decline"}

    transport.on_server_request = handler
    transport.start(child_argv())
    answer = transport.request("ask/me")
    assert seen == [("item/commandExecution/requestApproval", {"itemId": "x"})]
    assert answer["reply"]["id"] == 0
    assert answer["reply"]["result"] == {"decision": "decline"}


def test_fake_child_server_request_the_handler_refuses_gets_an_error_answer(transport):
    def handler(method, params):
        raise RpcError(-32601, f"{method} is not supported")

    transport.on_server_request = handler
    transport.start(child_argv())
    reply = transport.request("ask/unknown")["reply"]
    assert reply["id"] == 1
    assert reply["error"] == {"code": -32601, "message": "item/tool/call is not supported"}


def test_fake_child_exiting_mid_request_rejects_it_with_the_exit_code_and_its_stderr_as_detail(transport):
    transport.start(child_argv("exit-mid-request"))
    with pytest.raises(TransportClosed) as caught:
        transport.request("hang/exit")
    assert caught.value.code == "transport-closed"
    assert caught.value.sent is True
    assert "exited with code 3" in caught.value.message
    assert "the fake child exits in the middle of a request" not in caught.value.message
    assert caught.value.detail == "Error: the fake child exits in the middle of a request"
    with pytest.raises(TransportClosed):
        transport.request("after/exit")


def test_fake_child_exiting_rejects_notification_waits_too(transport):
    transport.start(child_argv("exit-mid-request"))
    transport.request("notify/me")
    looked = threading.Event()

    def never_matches(note):
        looked.set()  # seen under the lock that also registers the waiter
        return False

    thread, outcome = run_in_thread(transport.wait_for_notification, never_matches)
    looked.wait()
    with pytest.raises(TransportClosed):
        transport.request("hang/exit")
    thread.join()
    assert isinstance(outcome["error"], TransportClosed)
    assert "exited with code 3" in outcome["error"].message


def test_fake_child_malformed_line_rejects_pending_calls_and_ends_the_child(transport):
    transport.start(child_argv("malformed-line"))
    pid_process = transport._run.process
    with pytest.raises(TransportClosed) as caught:
        transport.request("break/line")
    assert caught.value.code == "protocol-error"
    assert "malformed line" in caught.value.message
    assert "this is not json" not in caught.value.message  # the child's own text: detail only
    assert "this is not json" in caught.value.detail
    assert pid_process.wait() != 0
    assert not transport.running


def test_fake_child_message_that_is_not_jsonrpc_is_a_protocol_error(transport):
    transport.start(child_argv("not-jsonrpc"))
    with pytest.raises(TransportClosed) as caught:
        transport.request("break/shape")
    assert caught.value.code == "protocol-error"
    assert "not JSON-RPC" in caught.value.message


def test_fake_child_stderr_flood_neither_blocks_calls_nor_reaches_our_output(transport, capfd):
    transport.start(child_argv())
    answer = transport.request("flood/stderr", {"megabytes": 8})
    assert answer["echo"] == "flood/stderr"
    assert transport.request("after/flood")["id"] == 2
    tail = transport.stderr_tail()
    assert 0 < len(tail) <= STDERR_TAIL_LINES
    assert tail[-1].startswith("FLOODED-STDERR-LINE")
    out, err = capfd.readouterr()
    assert "FLOODED" not in out and "FLOODED" not in err


def test_fake_child_stop_rejects_pending_calls_and_restart_begins_afresh(transport):
    transport.start(child_argv())
    transport.request("notify/me")
    thread, outcome = run_in_thread(transport.request, "hang/forever")
    transport.wait_for_notification(lambda n: n["method"] == "test/hanging")
    transport.stop()
    thread.join()
    assert isinstance(outcome["error"], TransportClosed)
    assert outcome["error"].code == "transport-stopped"
    assert outcome["error"].sent is True

    transport.start(child_argv())
    assert transport.retained_notifications() == []
    assert transport.request("again")["id"] == 1


def test_fake_child_cancel_signal_ends_a_request_nothing_answers(transport):
    transport.start(child_argv())
    signal = CancelSignal()
    thread, outcome = run_in_thread(transport.request, "hang/forever", signal=signal)
    transport.wait_for_notification(lambda n: n["method"] == "test/hanging")
    signal.cancel()
    thread.join()
    assert isinstance(outcome["error"], Cancelled)
    assert transport.request("still/usable")["id"] == 2


def test_fake_child_refusing_to_start_makes_the_first_request_fail_with_its_stderr_as_detail(transport):
    transport.start(child_argv("exit-at-start"))
    with pytest.raises(TransportClosed) as caught:
        transport.request("initialize")
    assert "exited with code 1" in caught.value.message
    assert "refuses to start" not in caught.value.message
    assert "refuses to start" in caught.value.detail


def test_fake_proxy_child_carries_messages_as_websocket_frames(transport):
    seen = []
    transport.on_server_request = lambda method, params: seen.append(method) or {"ok": True}
    transport.start(child_argv(websocket=True), framing="websocket")
    big = "x" * 100_000  # needs the 64-bit length form both ways
    answer = transport.request("echo/big", {"text": big})
    assert answer["params"]["text"] == big
    transport.request("notify/me")
    assert transport.wait_for_notification(lambda n: n["method"] == "test/notified")
    assert transport.request("ask/me")["reply"]["result"] == {"ok": True}
    assert seen == ["item/commandExecution/requestApproval"]


def test_fake_child_that_does_not_speak_websocket_fails_the_start_with_a_clear_error(transport):
    with pytest.raises(TransportClosed) as caught:
        transport.start(child_argv("exit-at-start"), framing="websocket")
    assert "WebSocket upgrade failed" in caught.value.message
    assert "refuses to start" not in caught.value.message
    assert "refuses to start" in caught.value.detail


def test_a_providers_output_as_detail_is_its_last_lines_and_at_most_4_kib():
    lines = [f"line {n}" for n in range(100)] + ["", "Error: the last words", ""]
    assert provider_output(lines) == "\n".join(lines[-STDERR_TAIL_LINES - 1 : -1])
    long_lines = ["y" * 900] * 10 + ["the end"]
    detail = provider_output(long_lines)
    assert len(detail.encode()) <= DETAIL_BYTE_LIMIT and detail.endswith("the end")
    assert provider_output(["", "   "]) is None


# -- a child that stops reading its stdin ------------------------------------------------

HANG_GUARD = 60  # seconds; only so a hang fails the test instead of stalling the suite
LARGE_WRITE = "x" * (8 << 20)  # far more than a pipe holds (64 KiB by default, 1 MiB at most)


def start_child_that_stops_reading(transport: JsonRpcTransport, framing: str) -> None:
    transport.start(child_argv("stop-reading", websocket=framing == "websocket"), framing=framing)
    transport.wait_for_notification(lambda n: n["method"] == "test/not-reading")


def wait_that_never_matches(transport: JsonRpcTransport) -> tuple[threading.Thread, dict]:
    looked = threading.Event()

    def never_matches(note):
        looked.set()  # seen under the lock that also registers the waiter
        return False

    thread, outcome = run_in_thread(transport.wait_for_notification, never_matches)
    looked.wait()
    return thread, outcome


def block_a_large_write(transport: JsonRpcTransport, signal: CancelSignal | None = None):
    """A request whose write provably blocks: the child announced it no longer reads, and
    the write has found the pipe full and waits for room."""
    thread, outcome = run_in_thread(transport.request, "large/write", {"text": LARGE_WRITE}, signal=signal)
    assert transport._run.input.waiting_for_room.wait(HANG_GUARD), "the write never filled the pipe"
    assert thread.is_alive()
    return thread, outcome


def finished(thread: threading.Thread) -> bool:
    thread.join(HANG_GUARD)
    return not thread.is_alive()


@pytest.mark.parametrize("framing", ["lines", "websocket"])
def test_fake_child_that_stops_reading_does_not_hang_stop_during_a_large_write(transport, framing):
    start_child_that_stops_reading(transport, framing)
    process = transport._run.process
    waiter, waited = wait_that_never_matches(transport)
    writer, written = block_a_large_write(transport)

    stopper, stopped = run_in_thread(transport.stop)
    assert finished(stopper), "stop() hung on the blocked write"
    assert stopped == {"value": None}
    # The child was killed at once: closing its stdin could never have ended it.
    assert process.returncode == -SIGKILL

    assert finished(writer)
    error = written["error"]
    assert isinstance(error, TransportClosed)
    assert (error.code, error.sent) == ("transport-stopped", True)
    assert finished(waiter)
    assert waited["error"].code == "transport-stopped"


@pytest.mark.parametrize("framing", ["lines", "websocket"])
def test_fake_child_that_stops_reading_is_ended_when_its_blocked_write_is_cancelled(transport, framing):
    start_child_that_stops_reading(transport, framing)
    process = transport._run.process
    waiter, waited = wait_that_never_matches(transport)
    cancel = CancelSignal()
    writer, written = block_a_large_write(transport, cancel)

    cancel.cancel()
    assert finished(writer), "the cancelled request hung on its blocked write"
    assert isinstance(written["error"], Cancelled)
    # Half the message is in the child's input, so the run cannot go on: the child is ended.
    assert process.wait(timeout=HANG_GUARD) == -SIGKILL
    assert not transport.running
    assert finished(waiter)
    assert waited["error"].code == "transport-stopped"
    with pytest.raises(TransportClosed) as caught:
        transport.request("after/cancel")
    assert caught.value.code == "transport-stopped"
    assert "cancelled in the middle of writing" in caught.value.message


def test_fake_child_a_sized_request_gives_the_answer_and_its_bytes_as_the_child_wrote_them(transport):
    import json

    transport.start(child_argv())
    value, size = transport.request_sized("sized/call", {"text": "é" * 10})
    assert value == {"echo": "sized/call", "id": 1, "params": {"text": "é" * 10}}
    # the fake child writes json.dumps of the whole response, one line (its newline not counted)
    assert size == len(json.dumps({"id": 1, "result": value}).encode())
    assert transport.request("plain/call") == {"echo": "plain/call", "id": 2, "params": {}}

"""Requests begun now and taken later (`JsonRpcTransport.begin_request`), against the
small fake child: its exit in the middle of a request and its silence are faults the
real Codex cannot be made to show (the real Codex serving a read while a page is
outstanding is in test_codex_listing_ahead.py)."""

from __future__ import annotations

import time

import pytest

from lib.drivers.jsonrpc_transport import TransportClosed
from tests.support.fake_codex_child import child_argv


def test_fake_child_a_begun_request_taken_after_other_calls_gets_its_own_answer(transport):
    transport.start(child_argv())
    begun = transport.begin_request("first/call", {"page": 2})
    other = transport.request("second/call")
    assert (other["echo"], other["id"]) == ("second/call", 2)
    first = begun.result()
    assert (first["echo"], first["id"], first["params"]) == ("first/call", 1, {"page": 2})


def test_fake_child_a_begun_request_never_taken_is_dropped_when_its_answer_arrives(transport):
    transport.start(child_argv())
    transport.begin_request("never/taken")
    transport.request("after/it")  # the child answers in order: the first answer has arrived
    assert transport._run is not None and transport._run.pending == {}


def test_fake_child_exiting_before_a_begun_request_is_taken_rejects_it_as_sent(transport):
    transport.start(child_argv("exit-mid-request"))
    begun = transport.begin_request("hang/exit")
    with pytest.raises(TransportClosed) as caught:
        begun.result()
    assert caught.value.code == "transport-closed" and caught.value.sent is True
    assert "exited with code 3" in caught.value.message


def test_fake_child_silent_since_a_begun_request_was_sent_stalls_it_when_taken(transport):
    transport.start(child_argv("silent"))
    begun = transport.begin_request("no/answer", stall_timeout=0.2)
    time.sleep(0.4)  # longer than the stall timeout, nothing arrives meanwhile
    with pytest.raises(TransportClosed) as caught:
        begun.result()
    assert caught.value.code == "provider-stalled"
    assert "no/answer" in caught.value.message
    assert not transport.running, "a stalled child is ended"


def test_fake_child_a_request_begun_after_the_run_ended_fails_at_once(transport):
    transport.start(child_argv("exit-mid-request"))
    with pytest.raises(TransportClosed):
        transport.request("hang/exit")
    with pytest.raises(TransportClosed):
        transport.begin_request("after/exit")

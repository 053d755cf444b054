"""Receipts: shared receipts, claims, provider outcomes, publication, refresh, callbacks."""

from __future__ import annotations

import pytest

from lib.commands import parse_command
from lib.drivers.base import DriverError
from lib.receipts import CommandReceipt, in_flight_receipt, terminal_receipt
from lib.types import CommandExecutionResult, DriverCapabilities
from lib.worker import CommandTasksFailed
from tests.support.scripted_driver import ScriptedDriver
from tests.support.sessions import make_snapshot
from tests.worker.helpers import PRODUCER, command


def shared(cid: str, status: str, producer: str | None = None) -> CommandReceipt:
    claim = CommandReceipt(
        command_id=cid, producer=producer, source_id="scripted", native_session_id="s1",
        status="in-flight", claimed_at="2026-07-01T12:00:00.000Z",
    )
    if status == "in-flight":
        return claim
    return terminal_receipt(claim, CommandExecutionResult(status=status, result={"from": "elsewhere"}))


def test_a_succeeded_prompt_has_one_in_flight_claim_then_one_terminal_receipt(make):
    h = make()
    h.worker.handle([command("p1")])
    h.worker.drain()
    assert h.target.events == [("claim", "p1", "in-flight"), ("publish", "p1", "succeeded")]
    receipt = h.target.receipt("p1")
    assert receipt.provider_operation_id == "turn-1" and receipt.result == {"reply": "ok"}
    assert receipt.claimed_at and receipt.completed_at
    assert h.ledgers.pending_publication_count() == 0
    assert h.receipts == [receipt]


def test_a_prompt_refreshes_every_target_while_active_and_after_its_outcome(make):
    h = make(targets=2)
    h.worker.handle([command("p1")])
    h.worker.drain()
    assert sorted(h.refreshes) == sorted([
        ("target-0", "scripted", "s1"), ("target-1", "scripted", "s1"),  # on_session_active
        ("target-0", "scripted", "s1"), ("target-1", "scripted", "s1"),  # after the outcome
    ])
    for target in h.targets:
        assert target.receipt("p1").status == "succeeded"


def test_a_terminal_shared_receipt_is_republished_without_a_provider_call(make):
    h = make()
    earlier = shared("p1", "succeeded")
    h.target.receipts[(None, "p1")] = earlier
    h.worker.handle([command("p1")])
    h.worker.drain()
    assert h.driver.calls_of("prompt") == []
    assert h.target.events == [("publish", "p1", "succeeded")]
    assert h.target.receipt("p1") == earlier
    assert h.ledgers.get("p1")["result"] == {"from": "elsewhere"}
    assert h.ledgers.pending_publication_count() == 0


def test_an_in_flight_shared_receipt_becomes_unknown_without_a_provider_call(make):
    h = make(sole_executor=True)  # it holds the executor lock: the claim's executor is dead
    h.target.receipts[(PRODUCER, "p1")] = shared("p1", "in-flight", PRODUCER)
    h.worker.handle([command("p1")], producer=PRODUCER)
    h.worker.drain()
    assert h.driver.calls_of("prompt") == []
    receipt = h.target.receipt("p1", PRODUCER)
    assert receipt.status == "unknown" and receipt.producer == PRODUCER
    assert receipt.error.code == "claim-lost-contact" and receipt.error.retryable is False
    assert receipt.claimed_at == "2026-07-01T12:00:00.000Z" and receipt.completed_at
    assert h.ledgers.get("p1", PRODUCER)["status"] == "unknown"


def test_fake_claim_publish_failure_gives_claim_publish_failed_and_no_provider_call(make):
    h = make()
    h.target.fail_claims = True
    h.worker.handle([command("p1")])
    h.worker.drain()
    assert h.driver.calls_of("prompt") == []
    receipt = h.target.receipt("p1")
    assert receipt.status == "failed" and receipt.error.code == "claim-publish-failed"
    assert h.ledgers.pending_publication_count() == 0


def test_fake_lost_claim_stores_the_winners_receipt_and_runs_nothing(make):
    h = make()
    winner = shared("p1", "in-flight")
    target = h.target

    def race(receipt: CommandReceipt) -> bool:  # another executor claimed it first
        target.receipts[(None, "p1")] = winner
        return False

    target.claim_receipt = race
    h.worker.handle([command("p1")])
    h.worker.drain()
    assert h.driver.calls_of("prompt") == []
    assert h.ledgers.get("p1") == winner.to_wire()
    assert h.ledgers.pending_publication_count() == 0
    assert h.receipts == [] and h.failures == []
    assert h.worker.recover_unpublished_receipts() == []  # the winner's claim is not ours to settle
    assert target.receipts[(None, "p1")] == winner


def test_fake_publication_failure_keeps_the_marker_refreshes_and_recovery_publishes_it(make):
    h = make()
    h.target.fail_publications = True
    h.worker.handle([command("p1")])
    with pytest.raises(CommandTasksFailed) as caught:
        h.worker.drain()
    assert caught.value.failures[0].command_id == "p1"
    assert len(h.driver.calls_of("prompt")) == 1
    assert ("target-0", "scripted", "s1") in h.refreshes
    assert h.ledgers.pending_publication_count() == 1
    assert h.ledgers.get("p1")["status"] == "succeeded"
    assert h.receipts == []  # the observer waits for publication
    assert h.target.receipt("p1").status == "in-flight"

    h.target.fail_publications = False
    recovered = h.worker.recover_unpublished_receipts()
    assert [(r.command_id, r.status) for r in recovered] == [("p1", "succeeded")]
    assert h.target.receipt("p1").status == "succeeded"
    assert h.ledgers.pending_publication_count() == 0
    assert h.worker.recover_unpublished_receipts() == []  # idempotent
    assert len(h.driver.calls_of("prompt")) == 1


def test_recover_turns_a_ledger_in_flight_into_unknown_and_publishes_it(make):
    h = make()
    claim = in_flight_receipt(parse_command(command("p1")), producer=PRODUCER)
    h.ledgers.put(claim)
    recovered = h.worker.recover_unpublished_receipts()
    assert len(recovered) == 1
    receipt = recovered[0]
    assert receipt.status == "unknown" and receipt.producer == PRODUCER
    assert receipt.error.code == "interrupted" and receipt.error.retryable is False
    assert receipt.claimed_at == claim.claimed_at and receipt.completed_at >= claim.claimed_at
    assert h.target.receipt("p1", PRODUCER) == receipt
    assert h.worker.recover_unpublished_receipts() == []
    h.worker.handle([command("p1")], producer=PRODUCER)  # an unknown is never retried
    h.worker.drain()
    assert h.driver.calls_of("prompt") == []


def test_the_receipt_callback_runs_after_publication_and_its_failure_breaks_nothing(make):
    seen = []

    def observer(h, receipt):
        seen.append((h.target.receipt(receipt.command_id) == receipt, h.ledgers.pending_publication_count()))
        raise RuntimeError("observer bug")

    h = make(on_receipt=observer)
    h.worker.handle([command("p1"), command("p2", "rename")])
    h.worker.drain()
    assert seen == [(True, 0), (True, 0)]
    assert h.target.receipt("p2").status == "succeeded"
    assert h.ledgers.get("p1")["status"] == "succeeded" and h.ledgers.pending_publication_count() == 0
    assert h.failures == []


def test_fake_task_failure_callback_gets_identities_and_the_error_never_the_payload(make):
    h = make()
    h.target.fail_publications = True
    h.worker.handle([command("p1", text="a private prompt text")], producer=PRODUCER)
    with pytest.raises(CommandTasksFailed):
        h.worker.drain()
    [failure] = h.failures
    assert (failure.command_id, failure.producer, failure.source_id, failure.native_session_id) == (
        "p1", PRODUCER, "scripted", "s1"
    )
    assert getattr(failure.error, "code", None) == "receipt-publish-failed"
    assert "a private prompt text" not in repr(failure)
    assert not hasattr(failure, "payload") and not hasattr(failure, "command")
    h.worker.drain()  # each failure is reported once


def test_an_unknown_source_gives_a_failed_receipt(make):
    h = make()
    h.worker.handle([command("p1", source="nowhere")])
    h.worker.drain()
    receipt = h.target.receipt("p1")
    assert receipt.status == "failed" and receipt.error.code == "unknown-source"
    assert receipt.source_id == "nowhere"
    assert h.driver.calls == [] and h.refreshes == []


def test_a_driver_error_gives_a_failed_receipt_with_its_code_and_message_never_its_detail(make):
    h = make()
    h.driver.results[("rename", "s1")] = DriverError(
        "provider-refused", "the provider refused the rename", retryable=True, detail="SECRET-TOKEN"
    )
    h.worker.handle([command("r1", "rename")])
    h.worker.drain()
    receipt = h.target.receipt("r1")
    assert receipt.status == "failed"
    assert (receipt.error.code, receipt.error.message, receipt.error.retryable) == (
        "provider-refused", "the provider refused the rename", True
    )
    assert "SECRET-TOKEN" not in str(receipt.to_wire())
    assert ("target-0", "scripted", "s1") in h.refreshes


def test_an_unexpected_provider_exception_gives_unknown(make):
    h = make()
    h.driver.results[("rename", "s1")] = RuntimeError("bug inside the driver")
    h.worker.handle([command("r1", "rename")])
    h.worker.drain()
    receipt = h.target.receipt("r1")
    assert receipt.status == "unknown" and receipt.error.code == "provider-call-raised"
    assert receipt.error.retryable is False


def test_provider_statuses_are_copied_into_the_terminal_receipt(make):
    h = make()
    h.driver.results[("set-mode", "s1")] = CommandExecutionResult.failure(
        "needs-confirmation", "confirm", "please confirm", retryable=False
    )
    h.worker.handle([command("m1", "set-mode"), command("o1", "set-config-option")])
    h.worker.drain()
    assert h.target.receipt("m1").status == "needs-confirmation"
    assert h.target.receipt("m1").error.code == "confirm"
    assert h.target.receipt("o1").status == "unsupported"


def test_a_start_receipt_repeats_the_minted_session_id_and_its_directory(make):
    driver = ScriptedDriver(capabilities=DriverCapabilities(prompt=True, cancel=True, start_session=True))
    h = make(driver=driver)
    h.worker.handle([command("st1", "start", session="new-session", text="go", cwd="/work/project")])
    h.worker.drain()
    receipt = h.target.receipt("st1")
    assert receipt.status == "succeeded"
    assert receipt.result == {"reply": "ok", "nativeSessionId": "new-session", "cwd": "/work/project"}
    assert h.refreshes.count(("target-0", "scripted", "new-session")) == 2  # active, then after


def test_a_failed_start_is_refreshed_too_and_keeps_the_driver_result(make):
    driver = ScriptedDriver(capabilities=DriverCapabilities(start_session=True), snapshots=[make_snapshot("s1")])
    h = make(driver=driver)
    h.worker.handle([command("st1", "start", session="s1", text="go")])  # s1 exists: the start fails
    h.worker.drain()
    receipt = h.target.receipt("st1")
    assert receipt.status == "failed" and receipt.error.code == "session-exists"
    assert receipt.result == {"nativeSessionId": "s1"}
    assert ("target-0", "scripted", "s1") in h.refreshes


def test_force_reaches_the_driver(make):
    h = make()
    seen = []
    original = h.driver.prompt

    def prompt(native_session_id, input, options=None):
        seen.append(options.force)
        return original(native_session_id, input, options)

    h.driver.prompt = prompt
    h.worker.handle([command("p1") | {"force": True}, command("p2")])
    h.worker.drain()
    assert seen == [True, False]



def test_without_the_executor_lock_an_in_flight_shared_receipt_is_left_to_its_executor(make):
    h = make()  # another executor may be running it right now
    claim = shared("p1", "in-flight", PRODUCER)
    h.target.receipts[(PRODUCER, "p1")] = claim
    h.worker.handle([command("p1")], producer=PRODUCER)
    h.worker.drain()
    assert h.driver.calls_of("prompt") == []
    assert h.target.receipt("p1", PRODUCER) == claim  # not turned unknown under its executor
    assert h.ledgers.get("p1", PRODUCER) is None  # nothing of ours to recover later
    assert h.worker.recover_unpublished_receipts() == []
    assert h.target.receipt("p1", PRODUCER) == claim

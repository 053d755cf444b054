"""Ordering: one queue per session, sessions concurrently, gated cancels.

Gates hold scripted provider calls; nothing here sleeps. A gate nobody opens fails its
test after a generous guard instead of hanging it."""

from __future__ import annotations

import threading

from tests.support.scripted_driver import GATE_GUARD_SECONDS, PromptScript
from tests.worker.helpers import command


def test_a_cancel_waits_for_the_prompts_milestone_then_bypasses_the_session_queue(make):
    h = make()
    before_milestone = h.driver.gate("prompt", "s1")  # holds the first prompt before it is cancellable
    h.driver.gate("prompt-running", "s1")  # a running prompt ends only when cancelled
    h.worker.handle([command("p1", text="first"), command("p2", text="second")])
    before_milestone.wait_reached()
    h.worker.handle([command("x1", "cancel")])
    before_milestone.open()
    h.worker.drain()
    # The cancel ran while p1 was running (so it could address it) and before p2, which
    # was still queued: had it queued behind p1, p1 would never have ended.
    cancel = h.target.receipt("x1")
    assert cancel.status == "succeeded", cancel
    first = h.target.receipt("p1")
    assert first.status == "failed" and first.error.code == "cancelled"
    assert h.target.receipt("p2").status == "succeeded"
    order = [c[0] for c in h.driver.calls if c[0] in ("prompt", "cancel")]
    assert order == ["prompt", "cancel", "prompt"]


def test_a_cancel_after_a_prompt_that_fails_before_its_milestone_runs_after_its_outcome(make):
    h = make()
    h.driver.prompts["s1"] = PromptScript(fail_before_ready=True)
    held = h.driver.gate("prompt", "s1")
    h.worker.handle([command("p1")])
    held.wait_reached()
    h.worker.handle([command("x1", "cancel")])
    held.open()
    h.worker.drain()
    events = h.target.events
    assert events.index(("publish", "p1", "failed")) < events.index(("claim", "x1", "in-flight"))
    assert h.target.receipt("x1").error.code == "no-active-prompt"


def test_a_cancel_with_nothing_running_runs_at_once(make):
    h = make()
    h.worker.handle([command("x1", "cancel")])
    h.worker.drain()
    assert h.driver.calls_of("cancel") == [("cancel", "s1")]
    assert h.target.receipt("x1").status == "failed"


def test_a_cancel_does_not_wait_for_other_sessions(make):
    cancelled = threading.Event()
    h = make(on_receipt=lambda h, r: cancelled.set() if r.command_id == "x-s1" else None)
    running = h.driver.gate("prompt-running", "s2")
    h.worker.handle([command("p-s2", session="s2")])
    running.wait_reached()
    h.worker.handle([command("x-s1", "cancel", session="s1")])
    assert cancelled.wait(GATE_GUARD_SECONDS), "the s1 cancel waited for the s2 prompt"
    running.open()
    h.worker.drain()
    assert h.target.receipt("p-s2").status == "succeeded"


def test_a_full_pool_does_not_hold_back_a_cancel(make):
    h = make(max_sessions=1)
    running = h.driver.gate("prompt-running", "s1")
    h.worker.handle([command("p1", session="s1"), command("p2", session="s2")])
    running.wait_reached()
    h.worker.handle([command("x1", "cancel", session="s1")])  # the pool's one thread is busy
    h.worker.drain()
    assert h.target.receipt("x1").status == "succeeded"
    assert h.target.receipt("p1").error.code == "cancelled"
    assert h.target.receipt("p2").status == "succeeded"


def test_commands_of_one_session_run_in_admission_order(make):
    h = make()
    held = h.driver.gate("prompt", "s1")
    h.worker.handle([command("a", text="first"), command("b", "rename"), command("c", text="third")])
    held.wait_reached()
    held.open()
    h.worker.drain()
    assert h.target.events == [
        ("claim", "a", "in-flight"), ("publish", "a", "succeeded"),
        ("claim", "b", "in-flight"), ("publish", "b", "succeeded"),
        ("claim", "c", "in-flight"), ("publish", "c", "succeeded"),
    ]


def test_two_sessions_prompts_run_at_the_same_time(make):
    h = make(max_sessions=2)
    first = h.driver.gate("prompt-running", "s1")
    second = h.driver.gate("prompt-running", "s2")
    h.worker.handle([command("p1", session="s1"), command("p2", session="s2")])
    first.wait_reached()
    second.wait_reached()  # both are running now; neither has been let go
    first.open()
    second.open()
    h.worker.drain()
    assert {h.target.receipt(c).status for c in ("p1", "p2")} == {"succeeded"}


def test_handle_returns_without_waiting_for_provider_work(make):
    h = make()
    running = h.driver.gate("prompt-running", "s1")
    h.worker.handle([command("p1")])  # returns while the prompt is held
    running.wait_reached()
    assert h.target.receipt("p1").status == "in-flight"
    running.open()
    h.worker.drain()
    assert h.target.receipt("p1").status == "succeeded"


def test_a_cancel_after_a_headless_start_waits_for_its_milestone(make):
    from lib.types import DriverCapabilities
    from tests.support.scripted_driver import ScriptedDriver

    h = make(driver=ScriptedDriver(capabilities=DriverCapabilities(prompt=True, cancel=True, start_session=True)))
    held = h.driver.gate("start-session", "new")
    h.driver.gate("prompt-running", "new")
    h.worker.handle([command("st", "start", session="new")])
    held.wait_reached()
    h.worker.handle([command("x", "cancel", session="new")])
    held.open()
    h.worker.drain()
    assert h.target.receipt("x").status == "succeeded"
    assert h.target.receipt("st").error.code == "cancelled"


def test_many_commands_over_few_threads_keep_each_sessions_order(make):
    h = make(sessions=tuple(f"s{i}" for i in range(6)), max_sessions=2)
    batch = [command(f"c{n}-s{i}", "rename" if n % 2 else "prompt", session=f"s{i}")
             for n in range(5) for i in range(6)]
    h.worker.handle(batch[:15])
    h.worker.handle(batch[15:])
    h.worker.drain()
    claims = [cid for kind, cid, _ in h.target.events if kind == "claim"]
    assert sorted(claims) == sorted(c["id"] for c in batch)
    for i in range(6):
        mine = [cid for cid in claims if cid.endswith(f"-s{i}")]
        assert mine == [f"c{n}-s{i}" for n in range(5)]
    assert all(h.target.receipt(c["id"]).status == "succeeded" for c in batch)
    assert h.ledgers.pending_publication_count() == 0

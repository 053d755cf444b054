"""`wait_for_receipt` waits on the store's wake hook (`Store.wait_for_change`) between
reads, so a store that pushes commits (PostgreSQL) or notices them (SQLite's data
version) ends the wait as soon as the receipt lands. Real SQLite store throughout."""

from __future__ import annotations

import threading
from pathlib import Path

from lib.command_submit import wait_for_receipt
from lib.receipts import CommandReceipt
from tests.fabric.target_helpers import make_env

GUARD = 60  # a hang guard, never a timing
CLAIMED, DONE = "2026-07-01T12:00:00.000Z", "2026-07-01T12:05:00.000Z"


def _receipt(status: str) -> CommandReceipt:
    done = {} if status == "in-flight" else {"completed_at": DONE}
    return CommandReceipt(command_id="c1", source_id="codex", native_session_id="s1", status=status,
                          claimed_at=CLAIMED, **done)


def test_the_wait_is_the_stores_wake_hook_and_ends_with_the_terminal_receipt(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    target.publish_receipt(_receipt("in-flight"))
    store = target.store
    original = store.wait_for_change
    calls: list[tuple[str, int]] = []

    def hook(space: str, seen: int, timeout: float, wake: threading.Event) -> None:
        calls.append((space, seen))
        assert seen == store.head(space)  # it waits from the head it has read
        if len(calls) == 2:  # the executor publishes while the submitter waits
            target.publish_receipt(_receipt("succeeded"))
        original(space, seen, timeout, wake)

    store.wait_for_change = hook
    receipt = wait_for_receipt(target, "c1", timeout=GUARD)

    assert receipt is not None and receipt.status == "succeeded"
    assert len(calls) == 2 and all(space == target.space for space, _ in calls)


def test_no_receipt_within_the_timeout_or_a_stop_gives_none(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    assert wait_for_receipt(target, "c1", timeout=0.05) is None
    stop = threading.Event()
    stop.set()
    assert wait_for_receipt(target, "c1", stop=stop) is None
    target.publish_receipt(_receipt("in-flight"))  # an in-flight receipt is not the end
    assert wait_for_receipt(target, "c1", timeout=0.05) is None

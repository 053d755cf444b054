"""Sending one command: build it, append it to a queue, and get its terminal receipt.

`send_command` is the one-shot form a person types (`agentctl command prompt codex
THREAD "..."`): the command is appended to its queue first, so it has exactly one
identity whoever runs it; then, when no executor holds the target's executor lock,
this process becomes the executor for that one command; otherwise it waits for the
running executor's receipt. Either way the receipt is the one in the store.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from lib.commands import COMMAND_SCHEMA, AgentSessionCommand, parse_command
from lib.errors import UsageError
from lib.fabric.store_lock import LockHeld, describe_holder
from lib.fabric.target import FabricTarget
from lib.receipts import CommandReceipt, utc_now_iso
from lib.types import normalize_source_id
from lib.workspace import Workspace

RECEIPT_POLL_SECONDS = 0.02  # how often a waiting process looks for the receipt
EXECUTOR_RETRY_SECONDS = 2.0  # how often it tries to become the executor itself


def build_command(
    workspace: Workspace,
    kind: str,
    source_id: str,
    native_session_id: str,
    payload: Mapping[str, Any],
    *,
    command_id: str | None = None,
    force: bool | None = None,
    requested_by: str | None = None,
) -> AgentSessionCommand:
    """A validated command for a configured source, owned by this identity.
    UsageError (exit 2) for an unknown source or a value the spec does not allow."""
    source = workspace.source_config(source_id)  # unknown-source, exit 2
    value: dict[str, Any] = {
        "schema": COMMAND_SCHEMA,
        "ownerDid": workspace.identity.did,
        "id": command_id if command_id is not None else str(uuid.uuid4()),
        "createdAt": utc_now_iso(),
        "sourceId": normalize_source_id(source.id),
        "nativeSessionId": native_session_id,
        "type": kind,
        "payload": dict(payload),
    }
    if force is not None:
        value["force"] = force
    if requested_by is not None:
        value["requestedBy"] = requested_by
    return parse_command(value, owner_did=workspace.identity.did)


def submit_command(workspace: Workspace, command: AgentSessionCommand, producer: str | None = None) -> None:
    """Append `command` to the owner's queue, or to `producer`'s."""
    target = workspace.open_target()
    if producer is not None and producer not in workspace.config.producers:
        known = ", ".join(sorted(workspace.config.producers)) or "none"
        raise UsageError("unknown-producer",
                         f"producer {producer!r} is not configured ([producers.{producer}] in the "
                         f"configuration); configured producers: {known}")
    target.append_command(command, producer)


def wait_for_receipt(
    target: FabricTarget,
    command_id: str,
    producer: str | None = None,
    *,
    stop: threading.Event | None = None,
    timeout: float | None = None,
) -> CommandReceipt | None:
    """The command's terminal receipt once an executor publishes it; None if `stop` is
    set or `timeout` seconds pass first. Only the space's head is read while nothing
    changes, and between reads it waits on the store's wake hook
    (`Store.wait_for_change`): PostgreSQL wakes it as soon as a commit lands, SQLite when
    its write-ahead log moves, so the receipt is read right after it is published. A
    `stop` set meanwhile is seen when that wait returns (at most a poll interval, or
    PostgreSQL's push fallback while it listens)."""
    store, space = target.store, target.space
    stop = stop or threading.Event()
    wake = threading.Event()  # the store's to set: never the caller's stop
    deadline = None if timeout is None else time.monotonic() + timeout
    seen_head = -1
    while True:
        head = store.head(space)
        if head != seen_head:
            seen_head = head
            receipt = target.read_receipt(command_id, producer)
            if receipt is not None and receipt.terminal:
                return receipt
        if stop.is_set():
            return None
        wait = RECEIPT_POLL_SECONDS
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            wait = min(wait, left)
        store.wait_for_change(space, seen_head, wait, wake)
        wake.clear()


def send_command(
    workspace: Workspace,
    command: AgentSessionCommand,
    producer: str | None = None,
    *,
    stop: threading.Event | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> CommandReceipt | None:
    """Submit, then carry the command out here, or wait for the running executor's
    receipt. The terminal receipt; None only when `stop` ended the wait.

    While it waits it tries, every EXECUTOR_RETRY_SECONDS, to become the executor
    itself: an executor that stops before it gets to the command (or a lock held only
    for a moment, as `agentctl health` does) never leaves it waiting for nobody."""
    from lib.executor import Executor  # the executor imports this module's neighbours

    submit_command(workspace, command, producer)
    target = workspace.open_target()
    stop = stop or threading.Event()
    told = False
    while not stop.is_set():
        try:
            with Executor(workspace) as executor:
                executor.recover()
                executor.run_values([command.to_wire()], producer)
            return wait_for_receipt(target, command.id, producer, stop=stop)
        except LockHeld as held:
            if on_wait is not None and not told:
                on_wait(f"an executor is running ({describe_holder(held.holder)}); waiting for its receipt")
                told = True
        receipt = wait_for_receipt(target, command.id, producer, stop=stop, timeout=EXECUTOR_RETRY_SECONDS)
        if receipt is not None:
            return receipt
    return None

"""Command queues: binding, appending, polling, subscribing, against a real SQLite store."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from lib.commands import COMMAND_SCHEMA, AgentSessionCommand, parse_command
from lib.fabric.cell_id import cell_id
from lib.fabric.command_queues import CommandDelivery
from lib.fabric.identity import did_key
from lib.fabric.store import Labels
from lib.fabric.store_errors import WriteDenied
from lib.fabric.target import FabricTarget, TargetError
from lib.fabric.values import Link
from lib.receipts import CommandReceipt
from tests.fabric.target_helpers import SPACE, Env, make_env

GUARD = 30.0  # a guard against hangs, never a synchronisation
HANDLER = did_key(bytes([7]) * 32)
STRANGER = did_key(bytes([9]) * 32)


def command(env: Env, command_id: str) -> AgentSessionCommand:
    return parse_command(
        {
            "schema": COMMAND_SCHEMA,
            "ownerDid": env.owner,
            "id": command_id,
            "createdAt": "2026-07-01T12:00:00.000Z",
            "sourceId": "codex",
            "nativeSessionId": "s1",
            "type": "prompt",
            "payload": {"text": f"run {command_id}"},
        }
    )


def queued_ids(value: Any) -> list[str]:
    return [item["id"] for item in value]


def polled(target: FabricTarget) -> dict[str | None, list[str]]:
    return {d.producer: queued_ids(d.value) for d in target.poll_commands()}


def as_writer(env: Env, writer: str) -> FabricTarget:
    """A target writing as writer (not opened: the roots are the owner's to create)."""
    return FabricTarget(env.store, space=SPACE, owner=env.owner, writer=writer)


def test_binding_accepts_only_the_owners_queue_cell_and_applies_its_policy(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    for wrong in (target.receipt_cell_id(), target.command_cell_id("p"), "of:fid1:elsewhere"):
        with pytest.raises(TargetError) as caught:
            target.bind_command_cell(wrong, env.owner)
        assert caught.value.code == "wrong-command-cell"
    target.bind_command_cell(target.command_cell_id(), env.owner)
    document = env.store.read(SPACE, target.command_cell_id())
    assert document.value == []
    assert document.labels == Labels((env.owner,), (env.owner,))
    cell = target.bind_producer_command_cell("debug", HANDLER)
    assert cell == target.command_cell_id("debug") != target.command_cell_id()
    assert env.store.read(SPACE, cell).labels == Labels((env.owner,), (HANDLER,))


def test_binding_rejects_a_populated_queue_with_foreign_labels(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    queue = target.command_cell_id()
    with env.store.transaction(SPACE, STRANGER) as tx:
        tx.write(queue, [command(env, "planted").to_wire()], Labels((env.owner,), (STRANGER,)))
        tx.commit()
    before = env.store.read(SPACE, queue)
    with pytest.raises(TargetError) as caught:
        target.bind_command_cell(queue, env.owner)
    assert caught.value.code == "unprotected-command-queue"
    assert env.store.read(SPACE, queue) == before
    with pytest.raises(TargetError) as caught:
        target.poll_commands()  # nothing was bound
    assert caught.value.code == "no-command-queue"
    # the same queue under exactly the policy's labels is adopted as it is
    target.bind_command_cell(queue, STRANGER)
    assert polled(target) == {None: ["planted"]}


def test_a_producer_queue_refuses_writes_from_another_identity(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    target.bind_producer_command_cell("debug", HANDLER)
    as_writer(env, HANDLER).append_command(command(env, "c1"), producer="debug")
    for intruder in (target, as_writer(env, STRANGER)):
        with pytest.raises(WriteDenied):
            intruder.append_command(command(env, "c2"), producer="debug")
    assert polled(target) == {"debug": ["c1"]}


def test_append_drops_the_commands_whose_receipt_on_this_queue_is_terminal(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    target.bind_command_cell(target.command_cell_id(), env.owner)
    for name in ("c1", "c2", "c3"):
        target.append_command(command(env, name))

    def receipt(name: str, status: str, producer: str | None = None) -> CommandReceipt:
        return CommandReceipt(
            command_id=name, producer=producer, source_id="codex", native_session_id="s1",
            status=status,
        )

    target.publish_receipt(receipt("c1", "succeeded"))
    target.publish_receipt(receipt("c2", "in-flight"))
    target.publish_receipt(receipt("c3", "failed", producer="other"))  # another queue's c3
    target.append_command(command(env, "c4"))
    assert polled(target) == {None: ["c2", "c3", "c4"]}


def test_poll_returns_each_bound_queue_with_its_producer_and_hydrates_links(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    target.bind_command_cell(target.command_cell_id(), env.owner)
    target.bind_producer_command_cell("debug", HANDLER)
    linked = cell_id({"test": "a command cell"})
    with env.store.transaction(SPACE, env.owner) as tx:
        tx.write(linked, command(env, "c1").to_wire())
        tx.commit()
    with env.store.transaction(SPACE, env.owner) as tx:
        tx.write(target.command_cell_id(), [Link(linked, SPACE, ())])
        tx.commit()
    target.append_command(command(env, "c2"))  # keeps the link as a link
    as_writer(env, HANDLER).append_command(command(env, "c3"), producer="debug")
    assert polled(target) == {None: ["c1", "c2"], "debug": ["c3"]}
    assert isinstance(env.store.read(SPACE, target.command_cell_id()).value[0], Link)


def test_a_subscription_delivers_a_newly_appended_command(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    target.bind_command_cell(target.command_cell_id(), env.owner)
    target.bind_producer_command_cell("debug", HANDLER)
    deliveries: list[CommandDelivery] = []
    started, arrived = threading.Event(), threading.Event()

    def callback(delivery: CommandDelivery) -> None:
        deliveries.append(delivery)
        if len(deliveries) == 2:
            started.set()
        if "c1" in queued_ids(delivery.value):
            arrived.set()

    subscription = target.subscribe_commands(callback, poll_interval=0.01)
    try:
        assert started.wait(GUARD)
        assert {(d.producer, tuple(queued_ids(d.value))) for d in deliveries} == {
            (None, ()), ("debug", ()),
        }
        as_writer(env, HANDLER).append_command(command(env, "c1"), producer="debug")
        subscription.wake()
        assert arrived.wait(GUARD)
        assert deliveries[-1].producer == "debug"
    finally:
        subscription.close()
    assert not subscription.alive


def test_a_failing_callback_does_not_stop_the_subscription(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    target.bind_command_cell(target.command_cell_id(), env.owner)
    arrived = threading.Event()

    def callback(delivery: CommandDelivery) -> None:
        if not delivery.value:
            raise RuntimeError("the first delivery fails")
        arrived.set()

    subscription = target.subscribe_commands(callback)
    try:
        target.append_command(command(env, "c1"))
        subscription.wake()
        assert arrived.wait(GUARD)
        assert subscription.alive
    finally:
        subscription.close()


def test_binding_while_subscribed_raises_until_the_subscription_closes(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    with pytest.raises(TargetError) as caught:
        target.subscribe_commands(lambda delivery: None)
    assert caught.value.code == "no-command-queue"
    target.bind_command_cell(target.command_cell_id(), env.owner)
    subscription = target.subscribe_commands(lambda delivery: None)
    try:
        with pytest.raises(TargetError) as caught:
            target.bind_producer_command_cell("debug", HANDLER)
        assert caught.value.code == "queue-bound-while-subscribed"
        assert env.store.read(SPACE, target.command_cell_id("debug")) is None
    finally:
        subscription.close()
    target.bind_producer_command_cell("debug", HANDLER)
    assert set(polled(target)) == {None, "debug"}


def test_a_read_only_target_binds_an_existing_queue_but_never_writes(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    writer = env.target()
    reader = env.target(read_only=True)
    with pytest.raises(TargetError) as caught:
        reader.bind_command_cell(reader.command_cell_id(), env.owner)  # would create it
    assert caught.value.code == "read-only-target"
    writer.bind_command_cell(writer.command_cell_id(), env.owner)
    writer.append_command(command(env, "c1"))
    reader.bind_command_cell(reader.command_cell_id(), env.owner)
    assert polled(reader) == {None: ["c1"]}
    with pytest.raises(TargetError) as caught:
        reader.append_command(command(env, "c2"))
    assert caught.value.code == "read-only-target"

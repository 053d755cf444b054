"""Admission: validation, the owner check, and deduplication by queue-qualified id."""

from __future__ import annotations

from tests.worker.helpers import PRODUCER, command


def test_the_same_command_delivered_twice_on_one_queue_runs_once(make):
    h = make()
    h.worker.handle([command("c1")])
    h.worker.handle([command("c1"), command("c1")])
    h.worker.drain()
    h.worker.handle([command("c1")])  # after it finished: the ledger knows it
    h.worker.drain()
    assert len(h.driver.calls_of("prompt")) == 1
    assert h.target.receipt("c1").status == "succeeded"
    assert [r.command_id for r in h.receipts] == ["c1"]


def test_the_same_id_on_two_queues_runs_twice_with_a_receipt_each(make):
    h = make()
    h.worker.handle([command("c1", text="from the owner")])
    h.worker.handle([command("c1", text="from the producer")], producer=PRODUCER)
    h.worker.drain()
    texts = sorted(call[2] for call in h.driver.calls_of("prompt"))
    assert texts == ["from the owner", "from the producer"]
    mine, theirs = h.target.receipt("c1"), h.target.receipt("c1", PRODUCER)
    assert mine.producer is None and mine.status == "succeeded"
    assert theirs.producer == PRODUCER and theirs.status == "succeeded"
    assert h.ledgers.get("c1")["status"] == "succeeded"
    assert h.ledgers.get("c1", PRODUCER)["producer"] == PRODUCER
    assert h.ledgers.pending_publication_count() == 0


def test_invalid_and_wrong_owner_commands_are_skipped_while_the_rest_runs(make):
    h = make()
    batch = [
        command("good-1"),
        {"garbage": True},
        command("bad-type") | {"type": "explode"},
        command("not-mine", owner="did:key:z6MkSomeoneElse"),
        '{"not": "a command"}',
        command("good-2", "rename"),
    ]
    h.worker.handle(batch)
    h.worker.drain()
    assert [c[0] for c in h.driver.calls if c[0] in ("prompt", "rename")] == ["prompt", "rename"]
    ids = {r["commandId"] for r in h.ledgers.receipts()}
    assert ids == {"good-1", "good-2"}
    assert h.failures == []


def test_a_json_string_command_is_accepted(make):
    import json

    h = make()
    h.worker.handle(json.dumps(command("as-text")))
    h.worker.drain()
    assert h.target.receipt("as-text").status == "succeeded"


def test_handle_takes_a_snapshot_of_the_values(make):
    h = make()
    gate = h.driver.gate("prompt", "s1")
    values = [command("c1", text="original")]
    h.worker.handle(values)
    gate.wait_reached()
    values[0]["payload"]["text"] = "changed"
    values.append(command("c2"))
    gate.open()
    h.worker.drain()
    assert [c[2] for c in h.driver.calls_of("prompt")] == ["original"]


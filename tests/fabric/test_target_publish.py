"""The materialised publish(collected) form, health records, and the publication lock."""

from __future__ import annotations

import threading
from pathlib import Path

from lib.drivers.base import DriverError
from lib.fabric.schemas import HEALTH_SCHEMA
from lib.pipeline.collected import publish_collected
from lib.reconcile import collect_source
from tests.fabric.target_helpers import (
    descriptor,
    hydrate,
    index,
    make_env,
    publish,
    rows,
    snapshot,
)
from tests.support.scripted_driver import ScriptedDriver

GUARD = 60.0


def test_publishing_fake_collected_sources_writes_reads_retentions_and_read_errors(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    first = ScriptedDriver(source_id="codex", snapshots=[snapshot("a"), snapshot("b"), snapshot("c")])
    assert publish_collected(target, [collect_source(first)], observation_sequence=target.begin_session_observation()) == 3

    published = target.published_sessions()
    second = ScriptedDriver(
        source_id="codex",
        snapshots=[snapshot("a", messages=5), snapshot("b"), snapshot("c")],
        read_faults={"c": DriverError("read-failed", "provider hiccup")},
    )
    retain = lambda summary: published.get(f"codex/{summary.native_session_id}") is not None and summary.native_session_id == "b"  # noqa: E731
    collected = collect_source(second, retain=retain)
    count = publish_collected(target, [collected], observation_sequence=target.begin_session_observation())

    assert count == 3
    assert {k: r["status"] for k, r in rows(target).items()} == {
        "codex/a": "complete",
        "codex/b": "complete",
        "codex/c": "partial",
    }
    source = index(target)["sources"][0]
    assert (source["listed"], source["read"], source["retained"], source["errorCount"]) == (3, 1, 1, 1)
    assert source["errors"][0]["code"] == "read-failed"
    assert source["inventoryComplete"] is True and source["complete"] is False


def test_publish_health_writes_the_host_value_under_the_health_schema(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    target.publish_health({"state": "ready", "sources": [{"sourceId": "codex", "ok": True}]})
    value = hydrate(target, target.health_cell_id())
    assert value == {
        "state": "ready",
        "sources": [{"sourceId": "codex", "ok": True}],
        "schema": HEALTH_SCHEMA,
        "ownerDid": env.owner,
    }
    target.publish_health({"state": "degraded", "sources": []})
    assert hydrate(target, target.health_cell_id())["state"] == "degraded"


def test_a_second_publication_waits_until_the_open_one_commits(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    waiting = threading.Event()
    first = env.target()
    second = env.target(on_lock_wait=lambda holder: waiting.set())
    order: list[str] = []

    pub = first.publication()
    pub.begin_source(descriptor(), None)

    def other() -> None:
        publish(second, descriptor(), [snapshot("from-second")])
        order.append("second committed")

    worker = threading.Thread(target=other)
    worker.start()
    assert waiting.wait(GUARD)
    pub.end_source({"sourceId": "codex", "inventoryComplete": True, "listedSessionIds": []})
    pub.commit()
    order.append("first committed")
    worker.join(GUARD)

    assert order == ["first committed", "second committed"]
    assert index(first)["generation"] == 2

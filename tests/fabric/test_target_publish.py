"""The materialised publish(collected) form, health records, and the publication lock."""

from __future__ import annotations

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
    outcome,
    prepared,
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


def test_a_slow_publication_and_a_quick_one_overlap_and_both_land(tmp_path: Path) -> None:
    """The publish lock is held only to read the prior index and to commit: a quick
    publication commits while a slow one is still writing graphs, without waiting, and
    the slow one's commit keeps what the quick one published."""
    env = make_env(tmp_path)
    slow_target = env.target()
    quick_target = env.target(lock_timeout=0)  # it would fail at once if it had to wait
    publish(slow_target, descriptor("claude", "claude-agent-sdk"), [snapshot("c-old")])

    slow = slow_target.publication()
    slow.begin_source(descriptor(), None)
    slow.add_prepared(prepared(descriptor(), snapshot("s1")))  # its graph is written now
    assert not slow_target.lock.held

    quick, _ = publish(quick_target, descriptor("claude", "claude-agent-sdk"),
                       [snapshot("c-old", messages=4), snapshot("c-new")])
    assert quick.generation == 2

    slow.add_prepared(prepared(descriptor(), snapshot("s2")))
    slow.end_source(outcome("codex", ["s1", "s2"]))
    summary = slow.commit()

    assert summary.generation == 3
    assert {k: r["status"] for k, r in rows(slow_target).items()} == {
        "claude/c-old": "complete",  # the quick publication's rows, kept by the slow one
        "claude/c-new": "complete",
        "codex/s1": "complete",
        "codex/s2": "complete",
    }


def test_an_older_slow_publication_keeps_what_a_newer_one_committed_while_it_ran(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot("s1"), snapshot("s2")])

    older = target.publication()
    older.begin_source(descriptor(), None)  # its sequence is older than the refresh below
    older.add_prepared(prepared(descriptor(), snapshot("s1", messages=3)))
    newer, _ = publish(env.target(), descriptor(), [snapshot("s1", messages=5)], listed=["s1"],
                       inventory_complete=False)  # s2 untouched: stale
    older.end_source(outcome("codex", ["s1"]))  # a complete inventory without s2
    summary = older.commit()

    s1 = rows(target)["codex/s1"]
    assert s1["snapshotHash"] == prepared(descriptor(), snapshot("s1", messages=5)).snapshot_hash
    assert summary.statuses == {"codex/s1": "complete", "codex/s2": "deleted"}

"""What a publication changes and what it leaves alone, through real `agentctl`
processes over the real Codex app server and a real SQLite store (issue 8's rules)."""

from __future__ import annotations

import json

import pytest

from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.types import AgentSourceConfig
from tests.support.cli import CODEX_BIN, agentctl_env, pipeline, run
from tests.support.codex_home import demo_threads, make_codex_home

CLOCK = "2026-02-12T09:00:00.000Z"


@pytest.fixture
def world(tmp_path):
    """Two sources over two Codex homes (codex: the demo threads; other: one thread)."""
    home = make_codex_home(tmp_path / "codex-home", demo_threads())
    other_home = make_codex_home(tmp_path / "other-home", demo_threads()[:1])
    config = tmp_path / "config.toml"
    config.write_text(
        f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\ncodexBin = "{CODEX_BIN}"\n'
        f'[sources.other]\ndriver = "codex-app-server"\ncodexHome = "{other_home}"\ncodexBin = "{CODEX_BIN}"\n'
    )

    def env(store: str = "fabric.sqlite3") -> dict[str, str]:
        return agentctl_env(tmp_path / "state", config, AGENTCTL_STORE=f"sqlite:///{tmp_path / store}",
                            AGENTCTL_CLOCK=CLOCK)

    return tmp_path, home, env


def statuses(env) -> dict[str, str]:
    every_status = [arg for status in ("complete", "partial", "stale", "deleted") for arg in ("--status", status)]
    rows = run(["sessions", "--json", *every_status], env).of("session")
    return {row["key"]: row["status"] for row in rows}


def rows(env) -> dict[str, dict]:
    return {row["key"]: row for row in run(["sessions", "--json"], env).of("session")}


def test_one_sources_publication_leaves_the_other_sources_sessions_alone(world):
    _tmp, home, env = world
    assert run(["sync"], env()).returncode == 0
    for path in home.rglob("*.jsonl"):  # codex's inventory now fails: codex collects incompletely
        path.chmod(0)
    try:
        *_, published = pipeline([["list", "codex"], ["prepare"], ["publish"]], env())
    finally:
        for path in home.rglob("*.jsonl"):
            path.chmod(0o600)
    assert published.returncode in (0, 3), published.stderr
    after = statuses(env())
    assert {k: v for k, v in after.items() if k.startswith("other/")} == {
        f"other/{demo_threads()[0].id}": "complete"
    }


def test_a_targeted_read_piped_to_publish_touches_no_other_session_and_keeps_lifecycle(world):
    _tmp, _home, env = world
    assert run(["sync", "codex"], env()).returncode == 0
    before = rows(env())
    archived = next(t for t in demo_threads() if t.archived)
    *_, published = pipeline([["read", "--source", "codex", archived.id], ["publish"]], env())
    assert published.returncode == 0, published.stderr
    [source] = published.of("source")
    assert source["observationSequence"] >= 1 and source["observationOrigin"]
    assert [p["key"] for p in published.of("published")] == [f"codex/{archived.id}"]
    after = rows(env())
    assert {k: r["status"] for k, r in after.items()} == {k: r["status"] for k, r in before.items()}
    assert after[f"codex/{archived.id}"]["archived"] is True


def archive_thread(home, thread_id: str) -> None:
    """Archive a thread the way Codex does: `thread/archive` on the real app server."""
    driver = CodexAppServerDriver(AgentSourceConfig(
        id="codex", driver="codex-app-server", codex_home=str(home), codex_bin=str(CODEX_BIN)))
    with driver:
        driver._transport.request("thread/archive", {"threadId": thread_id})  # test-only: no driver verb


def test_archiving_a_thread_reaches_the_index_on_a_plain_sync(world):
    _tmp, home, env = world
    assert run(["sync", "codex"], env()).returncode == 0
    thread = next(t for t in demo_threads() if not t.archived)
    listed_before = {s["summary"]["nativeSessionId"]: s["summary"] for s in run(["list", "codex"], env()).of("summary")}
    archive_thread(home, thread.id)
    listed_after = {s["summary"]["nativeSessionId"]: s["summary"] for s in run(["list", "codex"], env()).of("summary")}
    # the case the rule is for: archiving leaves the update time as it was
    assert listed_after[thread.id]["updatedAt"] == listed_before[thread.id]["updatedAt"]
    assert listed_after[thread.id]["archived"] is True

    result = run(["sync", "codex"], env())
    assert result.returncode == 0, result.stderr
    assert rows(env())[f"codex/{thread.id}"]["archived"] is True


def test_every_row_a_sync_marks_deleted_gets_a_published_record(world):
    _tmp, home, env = world
    assert run(["sync", "codex"], env()).returncode == 0
    gone = demo_threads()[0]
    for path in home.rglob(f"*{gone.id}.jsonl"):
        path.unlink()
    result = run(["sync", "codex"], env())
    assert result.returncode == 0, result.stderr
    changes = [(p["key"], p["action"], p["status"]) for p in result.of("published") if p["action"] == "deleted"]
    assert changes == [(f"codex/{gone.id}", "deleted", "deleted")]


def test_the_publication_record_passes_through_the_next_stage(world):
    _tmp, _home, env = world
    published = run(["sync", "codex"], env())
    [record] = published.of("publication")
    line = json.dumps(record) + "\n"
    passed = run(["prepare"], env(), input=line)
    assert passed.returncode == 0, passed.stderr
    assert passed.records == [record]


def test_a_session_that_fails_in_prepare_is_a_failed_read_of_that_session(world):
    _tmp, _home, env = world
    assert run(["sync", "codex"], env()).returncode == 0
    thread = demo_threads()[0]
    read = run(["read", "--source", "codex", thread.id], env())
    lines = []
    for record in read.records:
        if record["record"] == "snapshot":  # NaN: no plain JSON form to chunk
            record["snapshot"]["events"].append({"type": "bad", "n": float("nan")})
        lines.append(json.dumps(record) + "\n")
    *_, published = pipeline([["prepare"], ["publish"]], env(), input="".join(lines))
    assert published.returncode == 3
    [error] = published.of("error")
    assert error["stage"] == "prepare" and error["nativeSessionId"] == thread.id
    assert statuses(env())[f"codex/{thread.id}"] == "partial"


@pytest.mark.parametrize("sequence", [0, -3, "7", 1.5, True])
def test_an_observation_sequence_that_is_not_a_positive_integer_is_bad_input(world, sequence):
    _tmp, _home, env = world
    listing = run(["list", "codex"], env()).records
    listing[0]["observationSequence"] = sequence
    *_, published = pipeline([["publish"]], env(), input="".join(json.dumps(r) + "\n" for r in listing))
    assert published.returncode == 3, published.stderr
    [error] = published.of("error")
    assert error["code"] == "bad-input" and "observationSequence" in error["message"]
    assert "internal error" not in published.stderr
    assert len(published.of("published")) == len(demo_threads())


def test_a_sequence_from_another_store_is_not_used_and_the_record_says_so(world):
    _tmp, _home, env = world
    listing = run(["list", "codex"], env()).stdout  # allocated from the default store
    *_, published = pipeline([["publish"]], env("other.sqlite3"), input=listing)
    assert published.returncode == 0, published.stderr
    [source] = published.of("source")
    assert source["observationReallocated"] is True
    # every later sync of the other store publishes what is new (nothing is "skipped-newer")
    again = run(["sync", "codex", "--full"], env("other.sqlite3"))
    assert {p["action"] for p in again.of("published")} <= {"unchanged", "written", "retained"}


def test_an_emptied_provider_home_marks_nothing_deleted_without_accept_deletions(world):
    _tmp, home, env = world
    assert run(["sync", "codex"], env()).returncode == 0
    for path in list(home.rglob("*.jsonl")):
        path.unlink()
    suspect = run(["sync", "codex"], env())
    assert suspect.returncode == 3, suspect.stderr
    [error] = suspect.of("error")
    assert error["code"] == "suspect-deletions" and error["sourceId"] == "codex"
    assert "--accept-deletions" in error["message"]
    assert "deleted" not in set(statuses(env()).values())

    accepted = run(["sync", "codex", "--accept-deletions"], env())
    assert accepted.returncode == 0, accepted.stderr
    assert set(statuses(env()).values()) == {"deleted"}

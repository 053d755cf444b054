"""`agentctl publish` and `agentctl sync` as real processes over the real Codex app
server and a real SQLite store."""

from __future__ import annotations

import shutil

import pytest

from lib.fabric import values
from lib.fabric.graph_read import read_graph_value
from lib.fabric.publish_lock import publish_lock
from lib.fabric.session_reader import SessionReader
from lib.fabric.sqlite_store import SQLiteStore
from lib.fabric.values import Link
from tests.support.cli import CODEX_BIN, agentctl_env, pipeline, run
from tests.support.codex_home import demo_threads, make_codex_home

CLOCK = "2026-02-12T09:00:00.000Z"


@pytest.fixture
def world(tmp_path):
    """A Codex home with the demo threads, a config naming it, one shared identity."""
    home = make_codex_home(tmp_path / "codex-home", demo_threads())
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\ncodexBin = "{CODEX_BIN}"\n')

    def env(store_name: str = "fabric.sqlite3", **extra: str) -> dict[str, str]:
        settings = {
            "AGENTCTL_STORE": f"sqlite:///{tmp_path / store_name}",
            "AGENTCTL_CLOCK": CLOCK,
            **extra,
        }
        return agentctl_env(tmp_path / "state", config, **settings)

    return tmp_path, home, config, env


def all_cells(path) -> dict[str, tuple[str, object]]:
    """Every live cell of every space: id -> (fvj1 value text, labels)."""
    store = SQLiteStore(str(path))
    try:
        with store._connection() as conn:  # test-only inspection of every space
            spaces = [row[0] for row in conn.execute("SELECT did FROM spaces")]
        cells = {}
        for space in spaces:
            ids = [cell for cell, _ in store.changes_since(space, 0)]
            for cell, document in store.iter_many(space, ids):
                cells[(space, cell)] = (values.dumps(document.value), document.labels)
        return cells
    finally:
        store.close()


def session_graph_cells(path, space: str, owner: str) -> set[str]:
    """Every cell reachable from a published manifest (manifests, chunks, events)."""
    store = SQLiteStore(str(path))
    try:
        reader = SessionReader(store, space, owner)
        found: set[str] = set()

        def walk(cell_id: str) -> None:
            if cell_id in found:
                return
            found.add(cell_id)
            document = store.read(space, cell_id)
            stack = [document.value]
            while stack:
                value = stack.pop()
                if isinstance(value, Link):
                    walk(value.id)
                elif isinstance(value, dict):
                    stack.extend(value.values())
                elif isinstance(value, (list, tuple)):
                    stack.extend(value)

        for row in reader.index("all").sessions:
            walk(row["manifest"].id)
        return found
    finally:
        store.close()


def identity_did(tmp_path) -> str:
    import json

    return json.loads((tmp_path / "state" / "identity.json").read_text())["did"]


def test_the_piped_stages_and_sync_leave_identical_fabric_state(world):
    tmp_path, _home, _config, env = world
    *_, piped = pipeline([["list", "codex"], ["read"], ["prepare"], ["publish"]], env("piped.sqlite3"))
    assert piped.returncode == 0, piped.stderr
    synced = run(["sync", "codex"], env("synced.sqlite3"))
    assert synced.returncode == 0, synced.stderr
    piped_cells = all_cells(tmp_path / "piped.sqlite3")
    synced_cells = all_cells(tmp_path / "synced.sqlite3")
    assert len(piped_cells) > 50
    assert piped_cells == synced_cells


def test_the_short_pipe_without_read_publishes_the_same_state_as_sync(world):
    tmp_path, _home, _config, env = world
    *_, piped = pipeline([["list", "codex"], ["prepare"], ["publish"]], env("short.sqlite3"))
    assert piped.returncode == 0, piped.stderr
    assert run(["sync", "codex"], env("synced.sqlite3")).returncode == 0
    assert all_cells(tmp_path / "short.sqlite3") == all_cells(tmp_path / "synced.sqlite3")


def test_a_second_sync_with_no_provider_change_writes_no_session_graph_cell(world):
    tmp_path, _home, _config, env = world
    first = run(["sync"], env())
    assert first.returncode == 0, first.stderr
    store_path = tmp_path / "fabric.sqlite3"
    did = identity_did(tmp_path)
    graph_cells = session_graph_cells(store_path, did, did)
    store = SQLiteStore(str(store_path))
    head = store.head(did)
    store.close()

    second = run(["sync"], env(AGENTCTL_CLOCK="2026-02-12T10:00:00.000Z"))
    assert second.returncode == 0, second.stderr
    (publication,) = second.of("publication")
    assert publication["written"] == 0
    assert {p["action"] for p in second.of("published")} == {"retained"}
    store = SQLiteStore(str(store_path))
    changed = {cell for cell, _ in store.changes_since(did, head)}
    store.close()
    assert changed, "the indexes are refreshed"
    assert not changed & graph_cells


def test_full_sync_reads_every_session_and_rewrites_nothing_unchanged(world):
    _tmp_path, _home, _config, env = world
    assert run(["sync"], env()).returncode == 0
    again = run(["sync", "--full"], env())
    assert again.returncode == 0, again.stderr
    assert {p["action"] for p in again.of("published")} == {"unchanged"}


def test_sessions_lists_what_sync_published_and_show_reads_one_session(world):
    _tmp_path, _home, _config, env = world
    assert run(["sync"], env()).returncode == 0
    listed = run(["sessions"], env())
    rows = listed.of("session")
    assert {r["nativeSessionId"] for r in rows} == {t.id for t in demo_threads()}
    assert all(r["status"] == "complete" for r in rows)
    only_archived_dir = run(["sessions", "--status", "deleted"], env())
    assert only_archived_dir.of("session") == []

    key = rows[0]["key"]
    manifest = run(["show", key], env())
    assert manifest.returncode == 0, manifest.stderr
    assert manifest.records[0]["key"] == key
    events = run(["show", key, "--events"], env())
    thread = next(t for t in demo_threads() if t.id == rows[0]["nativeSessionId"])
    assert [e["id"] for e in events.records] == [turn.id for turn in thread.turns]
    missing = run(["show", "codex/no-such-session"], env())
    assert missing.returncode == 5 and "agentctl sessions" in missing.stderr


def test_a_thread_removed_from_codex_is_marked_deleted_by_the_next_sync(world):
    tmp_path, home, _config, env = world
    assert run(["sync"], env()).returncode == 0
    gone = demo_threads()[0]
    for path in home.rglob(f"*{gone.id}.jsonl"):
        path.unlink()
    second = run(["sync"], env())
    assert second.returncode == 0, second.stderr
    rows = {r["nativeSessionId"]: r for r in run(["sessions", "--status", "deleted"], env()).of("session")}
    assert set(rows) == {gone.id}
    assert rows[gone.id]["deletedAt"] == CLOCK


def test_a_source_that_cannot_start_is_reported_and_the_others_still_publish(world):
    tmp_path, home, config, env = world
    assert run(["sync"], env()).returncode == 0
    config.write_text(
        config.read_text()
        + f'\n[sources.broken]\ndriver = "codex-app-server"\ncodexHome = "{home}"\ncodexBin = "{tmp_path}/no-codex"\n'
    )
    result = run(["sync"], env())
    assert result.returncode == 3
    (error,) = result.of("error")
    assert error["sourceId"] == "broken" and error["stage"] == "start"
    sources = {s["sourceId"]: s for s in result.of("publication")[0]["sources"]}
    assert sources["broken"]["inventoryComplete"] is False
    assert sources["codex"]["complete"] is True


def test_a_broken_source_keeps_its_published_sessions(world):
    tmp_path, _home, config, env = world
    assert run(["sync"], env()).returncode == 0
    config.write_text(config.read_text().replace(str(CODEX_BIN), str(tmp_path / "no-codex")))
    result = run(["sync"], env())
    assert result.returncode == 3
    rows = run(["sessions", "--status", "stale", "--status", "complete", "--status", "partial"], env()).of("session")
    assert len(rows) == len(demo_threads())
    assert {r["status"] for r in rows} == {"stale"}


def test_a_publication_that_cannot_get_the_lock_says_which_process_holds_it(world):
    tmp_path, _home, _config, env = world
    assert run(["sync"], env()).returncode == 0  # creates the identity
    did = identity_did(tmp_path)
    store = SQLiteStore(tmp_path / "fabric.sqlite3")
    lock = publish_lock(store, did)
    lock.acquire()
    try:
        result = run(["sync", "--lock-timeout", "0.2"], env())
    finally:
        lock.release()
        store.close()
    assert result.returncode == 4
    last = result.stderr.strip().splitlines()[-1]
    assert "holds the publish lock" in last and f"pid {__import__('os').getpid()}" in last
    assert "Traceback" not in result.stderr


def test_sync_without_configuration_collects_the_codex_home_that_exists(world, tmp_path_factory):
    tmp_path, home, _config, env = world
    bare = env()
    bare["AGENTCTL_CONFIG"] = str(tmp_path / "absent.toml")
    bare.pop("AGENTCTL_CONFIG")
    bare["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    bare["HOME"] = str(tmp_path / "home-dir")
    bare["CODEX_HOME"] = str(home)
    bare["CODEX_BIN"] = str(CODEX_BIN)
    result = run(["sync"], bare)
    assert result.returncode == 0, result.stderr
    assert result.of("publication")[0]["sessionCount"] == len(demo_threads())
    nothing = dict(bare, CODEX_HOME=str(tmp_path / "no-such-home"))
    none = run(["sync"], nothing)
    assert none.returncode == 2 and "no agent homes found" in none.stderr


def test_publish_reports_a_bad_record_and_publishes_the_rest(world):
    _tmp_path, _home, _config, env = world
    listing = run(["list", "codex"], env()).stdout.splitlines(keepends=True)
    broken = "".join(listing[:2]) + '{"record": "prepared", "key": 1}\n' + "".join(listing[2:])
    *_, published = pipeline([["publish"]], env(), input=broken)
    assert published.returncode == 3
    assert len(published.of("error")) == 1
    assert len(published.of("published")) == len(demo_threads())


def test_read_graph_of_every_index_link_is_complete_after_sync(world):
    tmp_path, _home, _config, env = world
    assert run(["sync"], env()).returncode == 0
    did = identity_did(tmp_path)
    store = SQLiteStore(str(tmp_path / "fabric.sqlite3"))
    try:
        for row in SessionReader(store, did, did).index("all").sessions:
            manifest = read_graph_value(store, did, row["manifest"].id)
            assert manifest["snapshotHash"] == row["snapshotHash"]
    finally:
        store.close()
    shutil.rmtree(tmp_path / "run", ignore_errors=True)


def test_read_retains_sessions_whose_published_copy_is_current_and_full_reads_them(world):
    _tmp_path, _home, _config, env = world
    assert run(["sync"], env()).returncode == 0
    *_, retained = pipeline([["list", "codex"], ["read"]], env())
    assert retained.returncode == 0, retained.stderr
    assert retained.of("snapshot") == []
    assert {r["summary"]["nativeSessionId"] for r in retained.of("retained")} == {t.id for t in demo_threads()}
    *_, full = pipeline([["list", "codex"], ["read", "--full"]], env())
    assert len(full.of("snapshot")) == len(demo_threads()) and full.of("retained") == []

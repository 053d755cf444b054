"""`agentctl show --events` (a real process) prints the very same bytes from a store in
schema version 2's stored format as from the same cells kept the version 1 way (plain
fvj1 text, labels JSON in every row, text cell IDs), migrated when opened; and both
are the events as published."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from lib.fabric import cell_keys, stored_values
from lib.fabric.identity import load_or_create_identity
from lib.fabric.sqlite_schema import SCHEMA_VERSION
from lib.fabric.store import open_store
from lib.fabric.target import FabricTarget
from lib.pipeline.records import to_json_line
from lib.types import NativeSessionSnapshot, SessionSummary
from tests.fabric.target_helpers import descriptor, publish
from tests.fabric.test_sqlite_migration import V1_SCHEMA
from tests.support.cli import agentctl_env, run


def _events() -> list[dict]:
    words = "the quick brown fox jumps over the lazy dog café 東京 🙂 \u2028 \"quoted\" \\ "
    return [
        {"type": "turn", "id": f"t{i}", "items": [
            {"type": "commandExecution", "id": f"c{i}", "aggregatedOutput": words * (i * 20),
             "actions": [{"path": f"/p/{i}", "n": i}, {"path": "/same", "n": 0}]},
            {"type": "agentMessage", "id": f"m{i}", "text": words[: i + 3], "content": ["a", "a", i, 1.5, None]},
        ], "status": "completed", "/escaped": {"k": [i]}}
        for i in range(12)
    ]


def _snapshot(events: list[dict]) -> NativeSessionSnapshot:
    return NativeSessionSnapshot(
        summary=SessionSummary(native_session_id="s1", title="stored format", raw={"id": "s1"}),
        events=events, normalized_messages=[], complete=True,
    )


def _v1_copy(source: Path, copy: Path) -> None:
    """The same cells kept as schema version 1 kept them."""
    old = sqlite3.connect(source)
    new = sqlite3.connect(copy)
    new.execute("PRAGMA journal_mode = WAL")
    new.executescript(V1_SCHEMA)
    new.executemany("INSERT INTO meta VALUES (?, ?)",
                    [(k, "1" if k == "schemaVersion" else v) for k, v in old.execute("SELECT key, value FROM meta")])
    new.executemany("INSERT INTO spaces VALUES (?, ?, ?)", old.execute("SELECT id, did, head FROM spaces"))
    new.executemany("INSERT INTO sequences VALUES (?, ?, ?)", old.execute("SELECT * FROM sequences"))
    dids = dict(old.execute("SELECT id, did FROM spaces"))
    labels = dict(old.execute("SELECT id, json FROM labels"))
    rows = old.execute("SELECT space_id, cell_id, seq, labels_id, value FROM documents").fetchall()
    new.executemany("INSERT INTO documents VALUES (?, ?, ?, ?, ?)", [
        (space_id, cell_keys.cell(cell), seq, labels[labels_id],
         None if value is None else stored_values.decode(value, dids[space_id]))
        for space_id, cell, seq, labels_id, value in rows
    ])
    new.commit()
    new.close()
    old.close()


def test_show_events_prints_the_same_bytes_from_both_stored_formats(tmp_path: Path) -> None:
    events = _events()
    stores = {}
    for name in ("v2", "v1"):
        state = tmp_path / name / "state"
        state.mkdir(parents=True)
        stores[name] = (state, tmp_path / name / "fabric.sqlite3")
    state, path = stores["v2"]
    did = load_or_create_identity(state / "identity.json").did
    store = open_store(f"sqlite:///{path}")
    target = FabricTarget.open(store, space=did, owner=did)
    publish(target, descriptor(), [_snapshot(events)])
    store.close()
    # the v1 copy's owner is the same identity
    v1_state, v1_path = stores["v1"]
    (v1_state / "identity.json").write_bytes((state / "identity.json").read_bytes())
    (v1_state / "identity.json").chmod(0o600)
    _v1_copy(path, v1_path)
    conn = sqlite3.connect(path)
    compressed = conn.execute("SELECT count(*) FROM documents WHERE typeof(value) = 'blob'").fetchone()[0]
    conn.close()
    assert compressed > 0  # the v2 store did compress some values

    shown = {}
    for name, (state_dir, db) in stores.items():
        env = agentctl_env(state_dir, AGENTCTL_STORE=f"sqlite:///{db}")
        result = run(["show", "codex/s1", "--events"], env)
        assert result.returncode == 0, result.stderr
        shown[name] = result.stdout
    # compared as booleans: a failure's diff of two long texts would take minutes
    assert shown["v2"] == shown["v1"], "the two stored formats print different events"
    published = "".join(to_json_line(json.loads(json.dumps(e, sort_keys=True))) for e in events)  # stored keys are in canonical order
    assert shown["v2"] == published, "the events printed are not the events published"
    conn = sqlite3.connect(v1_path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schemaVersion'").fetchone() == (str(SCHEMA_VERSION),)
    conn.close()

"""Beyond the spec: two executor processes sharing one store, both handed the same new
commands at once, run each command exactly once. The claim is a store transaction (the
receipt cell must be absent), so the loser of each race records that it lost and calls
no provider."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from lib.fabric.identity import load_or_create_identity
from lib.fabric.store import open_store
from lib.fabric.target import FabricTarget
from tests.worker.helpers import command

GUARD = 120


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path: Path) -> str:
    """The shared store: a SQLite file, or a PostgreSQL database (the same contract)."""
    if request.param == "postgres":
        return request.getfixturevalue("postgres_url")
    return f"sqlite:///{tmp_path / 'fabric.db'}"


def test_two_executor_processes_run_each_command_exactly_once(tmp_path: Path, store_url: str) -> None:
    identity = tmp_path / "identity.json"
    owner = load_or_create_identity(identity).did
    db = store_url
    FabricTarget.open(open_store(store_url), space=owner, owner=owner).store.close()
    commands = [command(f"c{i}", "rename", f"s{i % 5}", source="scripted", owner=owner, title=f"c{i}")
                for i in range(60)]
    (tmp_path / "commands.json").write_text(json.dumps(commands))
    runs, go = tmp_path / "runs.log", tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.worker.executor_child", str(db), str(identity),
             str(tmp_path / f"ledgers-{n}"), str(runs), str(go), str(tmp_path / "commands.json")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for n in range(2)
    ]
    go.write_text("go")
    outputs = [child.communicate(timeout=GUARD) for child in children]
    for child, (_out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err

    calls = Counter(line.split()[0] for line in runs.read_text().splitlines())
    assert calls == Counter({f"c{i}": 1 for i in range(60)})  # every command ran, none twice
    ran_by = Counter(line.split()[1] for line in runs.read_text().splitlines())
    lost = sum(err.count("another executor") for _out, err in outputs)
    print(f"runs per process {dict(ran_by)}, claims lost or left to the other: {lost}")

    target = FabricTarget.open(open_store(store_url), space=owner, owner=owner)
    for i in range(60):
        receipt = target.read_receipt(f"c{i}")
        assert receipt is not None and receipt.status == "succeeded", (i, receipt)

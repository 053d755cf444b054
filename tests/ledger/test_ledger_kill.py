"""SIGKILL a process writing the ledger at random moments: it always reopens valid,
holding either the state before the interrupted commit or the one after it."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from lib.fabric import values
from lib.ledger import CommandLedger
from tests.ledger.kill_child import Model, deferred_steps

ROOT = Path(__file__).resolve().parents[2]
ITERATIONS = 30


def test_a_writer_killed_at_random_moments_leaves_the_old_or_the_new_state(tmp_path: Path):
    _kill_many_times(tmp_path, [], Model)


def test_a_writer_clearing_markers_deferred_killed_at_random_leaves_the_old_or_the_new_state(tmp_path: Path):
    """The worker's way: a cleared marker reaches the disk with the next put. A kill
    between the clear and that put leaves the marker set beside its receipt (recovery
    publishes it again); every kill leaves a valid ledger holding whole steps."""
    _kill_many_times(tmp_path, ["--deferred"], lambda generation: Model(deferred_steps(generation)))


def _kill_many_times(tmp_path: Path, mode: list[str], model_at) -> None:  # noqa: ANN001
    path = tmp_path / "ledger" / "l.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    last = 0
    torn = 0  # kills that landed inside a write (a temporary was left); random, not asserted
    for i in range(ITERATIONS):
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.ledger.kill_child", str(path), *mode],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            line = child.stdout.readline()  # the child has committed at least once and is writing
            assert line == "writing\n", f"child did not start writing: {child.stderr.read()}"
            time.sleep(rng.uniform(0, 0.03))  # a random moment inside the write loop, not synchronisation
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.wait()
            child.stdout.close()
            child.stderr.close()
        assert child.returncode == -signal.SIGKILL, f"iteration {i}: child ended on its own"
        torn += any(".tmp-" in n for n in os.listdir(path.parent))
        with CommandLedger.open(path) as ledger:
            generation = ledger.generation
            model = model_at(generation)
            assert generation > last, f"iteration {i}: generation {generation} after {last}"
            assert [r["commandId"] for r in ledger.pending()] == model.pending
            stored = ledger.receipts()
            assert [values.dumps(r) for r in stored] == [values.dumps(model.receipts[c]) for c in sorted(model.receipts)]
        last = generation
        assert not [n for n in os.listdir(path.parent) if ".tmp-" in n]  # open() removed the temporaries
    print(f"{torn} of {ITERATIONS} kills landed inside a write")

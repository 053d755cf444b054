"""FabricTarget makes its receipt group commit and its command queues on first use
(so an idle sync never imports them), and exactly once even when many threads ask at
the same time (the worker's threads share one target: two group commits or two sets of
queues would split what must be one)."""

from __future__ import annotations

import subprocess
import sys
import threading

from lib.fabric.identity import load_or_create_identity
from lib.fabric.store import open_store
from lib.fabric.target import FabricTarget


def _target(tmp_path) -> FabricTarget:
    owner = load_or_create_identity(tmp_path / "id.json").did
    store = open_store(f"sqlite:///{tmp_path / 'fabric.sqlite3'}")
    return FabricTarget.open(store, space=owner, owner=owner)


def test_many_threads_asking_at_once_get_one_group_commit_and_one_set_of_queues(tmp_path):
    target = _target(tmp_path)
    try:
        barrier = threading.Barrier(8)
        seen: list[tuple[object, object]] = []

        def ask() -> None:
            barrier.wait()
            seen.append((target.receipt_commits, target.queues))

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(seen) == 8
        assert len({id(commits) for commits, _ in seen}) == 1
        assert len({id(queues) for _, queues in seen}) == 1
        assert target.queues.cell_id() == target.command_cell_id()  # the queues it made are its own
    finally:
        target.store.close()


OPEN_AND_READ = """
import sys
from lib.fabric.identity import load_or_create_identity
from lib.fabric.store import open_store
from lib.fabric.target import FabricTarget
owner = load_or_create_identity(sys.argv[1] + "/id.json").did
target = FabricTarget.open(open_store("sqlite:///" + sys.argv[1] + "/fabric.sqlite3"), space=owner, owner=owner)
target.published_sessions()
print(" ".join(sorted(m for m in ("lib.commands", "lib.receipts", "lib.fabric.receipt_cells",
                                  "lib.fabric.command_queues", "lib.fabric.publication") if m in sys.modules)))
target.receipt_rows()
target.command_cell_id()
print(" ".join(sorted(m for m in ("lib.fabric.receipt_cells", "lib.fabric.command_queues") if m in sys.modules)))
"""


def test_a_target_that_only_reads_the_index_imports_no_receipt_or_command_module(tmp_path):
    done = subprocess.run([sys.executable, "-c", OPEN_AND_READ, str(tmp_path)], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    before, after = done.stdout.split("\n")[:2]
    assert before == ""
    assert after == "lib.fabric.command_queues lib.fabric.receipt_cells"  # made when first used

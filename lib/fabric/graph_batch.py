"""Several sessions' new graphs committed in one transaction (spec "Graph commits").

    batch = GraphBatch(target)
    if not batch.pending(root) and root not in target.store.existing(space, [root]):
        batch.add(plan_graph(...))          # staged, committed later with others
    batch.end_session()                     # commits once a bound is reached
    batch.flush()                           # before anything links the staged graphs

Session graphs are content addressed (session_graph.py): a graph whose root cell is
absent was never committed, and since a graph is only ever committed whole, none of
its cells exists either. Such a graph is written whole, without reading anything
first. Committing many of them together saves a transaction (and its fsync) per
session. The staged text is bounded by MAX_BYTES and the staged sessions by
MAX_SESSIONS, so memory stays one session's graph plus a small batch; a graph is never
split between two commits. A process that dies loses at most the uncommitted batch,
which nothing links yet: indexes are committed only after `flush`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lib.fabric.graph_plan import PlannedGraph
from lib.fabric.store import Transaction

if TYPE_CHECKING:
    from lib.fabric.session_graph import GraphTarget

MAX_BYTES = 4 * 2**20  # characters of value text staged before a commit
MAX_SESSIONS = 64  # sessions staged before a commit


class GraphBatch:
    def __init__(self, target: GraphTarget) -> None:
        self._target = target
        self._tx: Transaction | None = None
        self._roots: set[str] = set()
        self._sessions = 0
        self.commits = 0  # transactions committed so far (for counts in benches)

    def pending(self, cell_id: str) -> bool:
        """Whether the root of a graph staged and not yet committed is cell_id."""
        return cell_id in self._roots

    def add(self, graph: PlannedGraph) -> int:
        """Stage every cell of a graph whose root is known absent; returns the cells
        staged. Commits first when the batch already holds MAX_BYTES."""
        if self._tx is not None and self._tx.written_bytes >= MAX_BYTES:
            self.flush()
        if self._tx is None:
            self._tx = self._target.store.transaction(self._target.space, self._target.writer)
        labels = self._target.labels
        cells = graph.cells()
        for cell in cells:  # children before the root that links them
            self._tx.write(cell.id, cell.value, labels)
        self._roots.add(graph.root.id)
        return len(cells)

    def end_session(self) -> None:
        """One session's graphs are staged: commit when a bound is reached."""
        self._sessions += 1
        if self._tx is not None and (
            self._sessions >= MAX_SESSIONS or self._tx.written_bytes >= MAX_BYTES
        ):
            self.flush()

    def flush(self) -> None:
        """Commit what is staged (one transaction)."""
        tx, self._tx = self._tx, None
        self._roots = set()
        self._sessions = 0
        if tx is not None:
            tx.commit()
            self.commits += 1

    def discard(self) -> None:
        """Drop what is staged: nothing links it yet."""
        self._tx = None
        self._roots = set()
        self._sessions = 0

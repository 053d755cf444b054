"""Several sessions' new graphs committed in one transaction (spec "Graph commits").

    batch = GraphBatch(target)
    if not batch.pending(root) and root not in target.store.existing(space, [root]):
        batch.add(plan_graph(...))          # staged, committed later with others
    batch.end_session()                     # seals the batch once a bound is reached
    batch.flush()                           # before anything links the staged graphs

Session graphs are content addressed (session_graph.py): a graph whose root cell is
absent was never committed, and since a graph is only ever committed whole, none of
its cells exists either. Such a graph is written whole, without reading anything
first. Committing many of them together saves a transaction (and its fsync) per
session. The staged text is bounded by MAX_BYTES and the staged sessions by
MAX_SESSIONS; a graph is never split between two commits.

A batch that reaches a bound is sealed and handed to a second thread, which makes the
store's stored forms of its texts (`Store.stored_forms`: for SQLite the compression)
and then commits it, in one transaction, while the caller plans and stages the next
sessions: for SQLite both run mostly without the GIL (the rows go in one statement,
sqlite_rows_out.py), so the caller's thread no longer waits for them (a third of a
first sync's main thread; docs/store-size-and-speed.md, "Session 23" and "Session
25"). Batches are committed in order: sealing the next one, or `flush`, first waits for
the one before, and raises what its commit raised (a failure making its stored forms
or writing it, which leaves nothing of that batch). The worker commits on its own
thread's connection of the store, under the store's write lock like any commit.
Memory stays one session's graph plus two small batches. A process that dies loses at
most the uncommitted batches, which nothing links yet: indexes are committed only
after `flush`. Where the store cannot do that work without the GIL
(`Store.batch_commits_release_gil`), each batch is committed on the caller's thread
when it is sealed, as before.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from lib.fabric import values
from lib.fabric.graph_plan import PlannedGraph

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from lib.fabric.session_graph import GraphTarget

MAX_BYTES = 4 * 2**20  # characters of value text staged before a commit
MAX_SESSIONS = 64  # sessions staged before a commit

# One thread for the process commits every sealed batch, one batch at a time: started
# once (a thread per batch made the caller wait for each thread's start, which needs the
# GIL, a few milliseconds a batch on a loaded machine).
_worker: ThreadPoolExecutor | None = None
_worker_lock = threading.Lock()


def batch_worker() -> ThreadPoolExecutor:
    global _worker
    with _worker_lock:
        if _worker is None:
            # imported here: an idle sync imports this module and never commits a graph
            from concurrent.futures import ThreadPoolExecutor

            _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentctl-graph-batch")
        return _worker


class GraphBatch:
    def __init__(self, target: GraphTarget) -> None:
        self._target = target
        self._ids: list[str] = []  # cell IDs staged, children first
        self._texts: list[str] = []  # their fvj1 texts
        self._bytes = 0
        self._roots: set[str] = set()
        self._sessions = 0
        self._sealed: SealedWrite | None = None  # the batch before, being committed
        self.commits = 0  # transactions committed so far (for counts in benches)

    def pending(self, cell_id: str) -> bool:
        """Whether the root of a graph staged and not yet committed is cell_id."""
        return cell_id in self._roots or (self._sealed is not None and cell_id in self._sealed.roots)

    def add(self, graph: PlannedGraph) -> int:
        """Stage every cell of a graph whose root is known absent; returns the cells
        staged. Seals the batch first when it already holds MAX_BYTES."""
        if self._bytes >= MAX_BYTES:
            self._seal()
        cells = graph.cells()
        texts = [values.dumps(cell.value) for cell in cells]  # children before their root
        self._ids.extend([cell.id for cell in cells])
        self._texts.extend(texts)
        self._bytes += sum(map(len, texts))
        self._roots.add(graph.root.id)
        return len(cells)

    def end_session(self) -> None:
        """One session's graphs are staged: seal the batch when a bound is reached."""
        self._sessions += 1
        if self._ids and (self._sessions >= MAX_SESSIONS or self._bytes >= MAX_BYTES):
            self._seal()

    def flush(self) -> None:
        """Commit everything staged: the sealed batch, then the current one; then the
        store finishes what it deferred (`Store.finish_fresh_rows`: SQLite's key index,
        built once), on the worker after whatever was handed to it before."""
        self._commit_sealed()
        if self._ids:
            self._sealed = self._sealed_write()
            self._commit_sealed()
        self._sessions = 0
        store, space = self._target.store, self._target.space
        if not store.writes_alone(space):
            return
        if store.batch_commits_release_gil():
            batch_worker().submit(store.finish_fresh_rows, space).result()
        else:
            store.finish_fresh_rows(space)

    def discard(self) -> None:
        """Drop what is staged and sealed: nothing links it yet. A sealed batch not yet
        being committed is not; one being committed is waited for (its error dropped), so
        that no commit runs on after the caller (who may close the store)."""
        sealed, self._sealed = self._sealed, None
        if sealed is not None:
            sealed.drop()
        self._take()
        self._sessions = 0

    def _seal(self) -> None:
        """Wait for the batch sealed before (raising what its commit raised), then seal the
        current one: it is committed on the worker thread where the store does that
        without the GIL, else at once."""
        self._commit_sealed()
        if self._ids:
            self._sealed = self._sealed_write()
            if not self._sealed.background:
                self._commit_sealed()
        self._sessions = 0

    def _sealed_write(self) -> SealedWrite:
        ids, texts, roots = self._take()
        return SealedWrite(self._target, ids, texts, roots=roots,
                           background=self._target.store.batch_commits_release_gil())

    def _take(self) -> tuple[list[str], list[str], set[str]]:
        taken = self._ids, self._texts, self._roots
        self._ids, self._texts, self._roots, self._bytes = [], [], set(), 0
        return taken

    def _commit_sealed(self) -> None:
        """The sealed batch committed: waits for it; raises what its commit raised."""
        sealed, self._sealed = self._sealed, None
        if sealed is None:
            return
        sealed.committed()
        self.commits += 1


class SealedWrite:
    """Cells no longer staged to (their IDs and fvj1 texts, children first), committed in
    one transaction, their stored forms made first; on the worker thread when
    `background`, else at once. `roots`: the graphs' roots it holds (GraphBatch.pending).

    Also the early index rows' groups (early_rows.py), which `require_absent` their
    cells: such a write commits nothing, and `committed` gives None, when one exists.
    Their stored forms are made on the worker too, but their transaction runs on the
    caller's thread, at `committed`: the store takes the rules' path for it (each row
    read, then written row by row, the GIL taken back for every row), which on the worker
    stalled it behind the caller's Python and held up the graph batches queued after it
    (a 3,000-thread first sync 0.4 to 0.9 s slower; docs/store-size-and-speed.md,
    "Session 26")."""

    def __init__(
        self, target: GraphTarget, ids: list[str], texts: list[str], *, background: bool,
        roots: set[str] | frozenset[str] = frozenset(), require_absent: bool = False,
    ) -> None:
        self.ids, self.texts, self.roots = ids, texts, roots
        self.background = background
        self._target = target
        self._require_absent = require_absent
        self._dropped = False
        from concurrent.futures import Future

        self._future: Future[int | None] | Future[list[str | bytes] | None]
        if background:  # a write required absent: only its stored forms there
            self._future = batch_worker().submit(self._forms if require_absent else self._commit)
        else:
            self._future = Future()
            try:
                self._future.set_result(self._commit())
            except Exception as error:  # raised by `committed`, as the worker's would be
                self._future.set_exception(error)

    def committed(self) -> int | None:
        """Once the cells are committed: the commit's sequence number, or None when a
        cell required absent exists (nothing written); raises what committing raised."""
        if self.background and self._require_absent:
            return self._write(self._future.result())  # type: ignore[arg-type]
        return self._future.result()  # type: ignore[return-value]

    def drop(self) -> None:
        """Commit nothing more of this write: a commit not started is not; one under way
        is waited for."""
        self._dropped = True
        if not self._future.cancel():
            try:
                self._future.result()
            except Exception:  # dropped with its batch: nothing links what it wrote
                pass

    def _forms(self) -> list[str | bytes] | None:
        return self._target.store.stored_forms(self._target.space, self.texts)

    def _commit(self) -> int | None:
        stored = self._forms()
        return None if self._dropped else self._write(stored)

    def _write(self, stored: list[str | bytes] | None) -> int | None:
        target = self._target
        labels = target.labels
        tx = target.store.transaction(target.space, target.writer)
        if self._require_absent:  # the rules' path: rows read, the group all or nothing
            for cell_id in self.ids:
                tx.require_absent(cell_id)
        else:
            tx.expect_new_cells()  # content-addressed cells that Store.existing found absent
        write = tx.write
        if stored is None:
            for cell_id, text in zip(self.ids, self.texts, strict=True):
                write(cell_id, None, labels, text=text)
        else:
            for cell_id, text, form in zip(self.ids, self.texts, stored, strict=True):
                write(cell_id, None, labels, text=text, stored=form)
        if not self._require_absent:
            return tx.commit()
        from lib.fabric.store_errors import PreconditionFailed

        try:
            return tx.commit()
        except PreconditionFailed:  # one exists: nothing of this write is written
            return None

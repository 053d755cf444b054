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

A batch that reaches a bound is sealed: the store's stored forms of its texts
(`Store.stored_forms`: for SQLite the compression, a fifth of a first sync's main
thread) are made on a second thread while the caller plans and stages the next
sessions, and the sealed batch is committed, in order, when the next one is sealed or
at `flush`. A batch is written only once all its stored forms are made, in one
transaction; a failure making them is that commit's error, and nothing of the batch
is written. Memory stays one session's graph plus two small batches. A process that
dies loses at most the uncommitted batches, which nothing links yet: indexes are
committed only after `flush`.
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

# One thread for the process makes every sealed batch's stored forms, one batch at a
# time: started once (a thread per batch made the caller wait for each thread's start,
# which needs the GIL, a few milliseconds a batch on a loaded machine).
_worker: ThreadPoolExecutor | None = None
_worker_lock = threading.Lock()


def _stored_forms_worker() -> ThreadPoolExecutor:
    global _worker
    with _worker_lock:
        if _worker is None:
            # imported here: an idle sync imports this module and never commits a graph
            from concurrent.futures import ThreadPoolExecutor

            _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentctl-stored-forms")
        return _worker


class GraphBatch:
    def __init__(self, target: GraphTarget) -> None:
        self._target = target
        self._ids: list[str] = []  # cell IDs staged, children first
        self._texts: list[str] = []  # their fvj1 texts
        self._bytes = 0
        self._roots: set[str] = set()
        self._sessions = 0
        self._sealed: _Sealed | None = None  # the batch before, its stored forms being made
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
        """Commit everything staged: the sealed batch, then the current one."""
        self._commit_sealed()
        if self._ids:
            self._sealed = _Sealed(self._target, self._take(), background=False)
            self._commit_sealed()
        self._sessions = 0

    def discard(self) -> None:
        """Drop what is staged and sealed: nothing links it yet (a thread still making
        stored forms finishes on its own; they are dropped)."""
        self._sealed = None
        self._take()
        self._sessions = 0

    def _seal(self) -> None:
        """Commit the batch sealed before, then seal the current one: its stored forms are
        made on another thread where the store makes them without the GIL (else it is
        committed at once, as a batch always was)."""
        self._commit_sealed()
        if self._ids:
            background = self._target.store.stored_forms_release_gil()
            self._sealed = _Sealed(self._target, self._take(), background=background)
            if not background:
                self._commit_sealed()
        self._sessions = 0

    def _take(self) -> tuple[list[str], list[str], set[str]]:
        taken = self._ids, self._texts, self._roots
        self._ids, self._texts, self._roots, self._bytes = [], [], set(), 0
        return taken

    def _commit_sealed(self) -> None:
        sealed, self._sealed = self._sealed, None
        if sealed is None:
            return
        stored = sealed.stored()  # raises what making them raised: nothing is written
        target = self._target
        labels = target.labels
        tx = target.store.transaction(target.space, target.writer)
        tx.expect_new_cells()  # content-addressed cells that Store.existing found absent
        write = tx.write
        if stored is None:
            for cell_id, text in zip(sealed.ids, sealed.texts, strict=True):
                write(cell_id, None, labels, text=text)
        else:
            for cell_id, text, form in zip(sealed.ids, sealed.texts, stored, strict=True):
                write(cell_id, None, labels, text=text, stored=form)
        tx.commit()
        self.commits += 1


class _Sealed:
    """A batch no longer staged to: its cell IDs and texts, its graphs' roots, and the
    store's stored forms of its texts, made on the worker thread when `background`."""

    def __init__(
        self, target: GraphTarget, taken: tuple[list[str], list[str], set[str]], *, background: bool
    ) -> None:
        self.ids, self.texts, self.roots = taken
        from concurrent.futures import Future

        make = target.store.stored_forms
        self._future: Future[list[str | bytes] | None]
        if background:
            self._future = _stored_forms_worker().submit(make, target.space, self.texts)
        else:
            self._future = Future()
            try:
                self._future.set_result(make(target.space, self.texts))
            except Exception as error:  # raised at the commit, as the worker's would be
                self._future.set_exception(error)

    def stored(self) -> list[str | bytes] | None:
        """The stored forms (None: the store makes them at commit), once made; raises
        what making them raised."""
        return self._future.result()

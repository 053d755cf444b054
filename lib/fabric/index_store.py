"""Reading the prior indexes, and committing both new indexes with the ordering state.

The prior complete index is hydrated with `manifest` links preserved, so a
publication reads every row but no transcript. The commit is one transaction: both
index roots, every row cell that changed (the two indexes share their row cells,
since their array scope is the same), and the ordering cell. It also checks that
neither index nor the ordering changed since the publication read them (another
machine sharing the store), and fails rather than overwrite what it did not see.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lib.errors import CodedError
from lib.fabric.cell_id import all_session_index_cause, cell_id, recent_session_index_cause
from lib.fabric.committed_prior import CommittedRows, committed_prior
from lib.fabric.graph_plan import PlannedCell
from lib.fabric.graph_read import read_graph_value
from lib.fabric.index_root_write import stored_root, write_root
from lib.fabric.index_roots import (
    changed_cells,
    plan_index_root,
    root_digest,
    roots_unchanged,
)
from lib.fabric.index_rows import RowLinker
from lib.fabric.ordering import OrderingState, ordering_cause, read_ordering
from lib.fabric.ordering_text import text_pieces
from lib.fabric.packed_previews import FIELD as PREVIEWS
from lib.fabric.packed_previews import spilled_bytes
from lib.fabric.prior_rows import (
    PRESERVED_LINK_FIELDS,
    RowLinks,
    read_root,
    read_rows,
)
from lib.fabric.prior_table import PriorRows
from lib.fabric.schemas import SESSION_INDEX_ARRAY_SCOPE, scope
from lib.fabric.session_graph import GraphTarget
from lib.fabric.values import Link
from lib.memory_release import release_freed_memory

if TYPE_CHECKING:
    from lib.fabric.early_rows import EarlyRows


class IndexConflict(CodedError):
    """Another publisher changed an index during this publication: nothing was committed."""


@dataclass(frozen=True)
class IndexCells:
    recent: str
    all: str
    ordering: str

    @staticmethod
    def of(space: str, owner: str) -> IndexCells:
        return IndexCells(
            recent=cell_id(recent_session_index_cause(space, owner)),
            all=cell_id(all_session_index_cause(space, owner)),
            ordering=cell_id(ordering_cause(space, owner)),
        )


@dataclass
class PriorIndex:
    # packed rows (packed_rows.py); read from the store, one table (prior_table.py)
    rows: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    sources: list[dict[str, Any]] = field(default_factory=list)
    checkouts: list[dict[str, Any]] = field(default_factory=list)
    generation: int = 0
    versions: dict[str, int] = field(default_factory=dict)
    ordering: OrderingState = field(default_factory=OrderingState)
    dropped_rows: int = 0
    # key -> the row's stored cell (a prior read from the store: prior_rows.RowLinks)
    row_links: Mapping[str, Link] = field(default_factory=dict)
    # root cell -> a digest of the value this process committed there (index_roots.
    # root_digest; not read back: a refresh that changes nothing compares its roots)
    roots: dict[str, Any] = field(default_factory=dict, compare=False)
    # which rows those roots hold as recent, by time (session_index.RecentWindow): a
    # refresh that changes no row tells from it whether time moved a row across
    window: Any = field(default=None, compare=False)
    # rows and row_links still to be made from a commit's own values (_committed): a
    # one-shot sync never reads them back, so it makes no second object per row
    pending: Callable[[PriorIndex], None] | None = field(default=None, compare=False, repr=False)

    def ready(self) -> PriorIndex:
        """This prior with its rows made (when a commit left them to be made). Threads
        may share it (`cached_prior` takes no publish lock): the rows are made once, and
        `pending` is cleared only once they are there."""
        if self.pending is not None:
            with _MAKING:
                if self.pending is not None:
                    self.pending(self)
                    self.pending = None
        return self


_MAKING = threading.Lock()


def read_complete_index(target: GraphTarget, cells: IndexCells) -> tuple[Any, Any]:
    """The hydrated complete index value (manifests as links) and its root document."""
    document = target.store.read(target.space, cells.all)
    if document is None:
        return None, None
    value = read_graph_value(
        target.store, target.space, cells.all, preserve_link_fields=PRESERVED_LINK_FIELDS
    )
    return value, document


def read_prior(target: GraphTarget, cells: IndexCells) -> PriorIndex:
    """The index as it is now: `cached_prior` when it can, else read from the store (the
    caller holds the publish lock, so no commit lands between the cells' reads)."""
    return cached_prior(target, cells) or _stored_prior(target, cells)


def cached_prior(target: GraphTarget, cells: IndexCells) -> PriorIndex | None:
    """The index this process last committed, when it is still the stored one (the three
    cells at the versions that commit gave them, no row cell written since), instead of
    reading and hydrating every row again: a session refresh after a command then costs
    what its own session costs, not what the whole index does. One change-feed query
    decides it, so it needs no publish lock (session 24); None when it is not current."""
    committed: PriorIndex | None = target.committed.get(cells.all)
    if committed is None:
        return None
    committed.ready()
    # since the newest of its versions: its commit saw the other cells at theirs
    if changed_since(
        target, max(committed.versions.values()),
        {*committed.versions, *(link.id for link in committed.row_links.values())},
    ):
        return None
    return _copy(committed)


def _stored_prior(target: GraphTarget, cells: IndexCells) -> PriorIndex:
    prior = PriorIndex()
    document = read_root(target, cells.all)
    prior.versions[cells.all] = document.seq if document is not None else 0
    if document is not None:
        read_rows(target, document.value, prior, ROW_BATCH)
    # only its version and generation are read: its row links (as many as the complete
    # index's) are left undecoded; the commit writes this root anew
    recent = dict(target.store.iter_many(target.space, [cells.recent], keep_fields=_ROWS)).get(cells.recent)
    prior.versions[cells.recent] = recent.seq if recent is not None else 0
    if recent is not None and isinstance(recent.value, dict):
        generation = recent.value.get("generation")
        if type(generation) is int and generation > prior.generation:
            prior.generation = generation
    version, prior.ordering = read_ordering(target.store, target.space, cells.ordering, prior.rows)
    prior.versions[cells.ordering] = version
    return prior


_ROWS = frozenset({"sessions"})


def prior_is_current(target: GraphTarget, cells: IndexCells, prior: PriorIndex) -> bool:
    """No index or ordering cell moved since `prior` was read (three version reads)."""
    return all(target.store._read_version(target.space, cell) == seen for cell, seen in prior.versions.items())


def changed_since(target: GraphTarget, seq: int, cells: set[str]) -> bool:
    """Whether any of `cells` was written after `seq` (by anyone: the change feed)."""
    return any(cell in cells for cell, _ in target.store.changes_since(target.space, seq))


def _copy(prior: PriorIndex) -> PriorIndex:
    """A prior a publication may use as its own: containers copied, rows shared (a
    publication copies a row before it changes it)."""
    rows = prior.rows if isinstance(prior.rows, PriorRows) else dict(prior.rows)  # a table is read-only
    links = prior.row_links.copy(rows) if isinstance(prior.row_links, RowLinks) else dict(prior.row_links)
    return PriorIndex(
        rows=rows, sources=list(prior.sources), checkouts=list(prior.checkouts),
        generation=prior.generation, versions=dict(prior.versions), ordering=prior.ordering,
        dropped_rows=prior.dropped_rows, row_links=links, roots=prior.roots, window=prior.window,
    )


ROW_BATCH = 256  # index rows planned (and, when nothing links them yet, written) at a time
# ... and at most about this many bytes of their spilled previews: a group's cells are
# staged (texts, then the transaction's buffer) before they are written, and rows with
# large previews made a 256-row group several megabytes (session 23)
GROUP_BYTES = 1 << 20


def row_groups(rows: Iterable[Mapping[str, Any]]) -> Iterator[list[Mapping[str, Any]]]:
    """`rows` in order, in groups of at most ROW_BATCH rows and, beyond a group's first
    row, at most GROUP_BYTES of spilled previews (packed_previews.spilled_bytes); a group
    is taken from `rows` only as it is yielded (index_rows.py reads the values' rows one
    at a time)."""
    group: list[Mapping[str, Any]] = []
    size = 0
    for row in rows:
        held = spilled_bytes(row.get(PREVIEWS))
        if group and (len(group) >= ROW_BATCH or size + held > GROUP_BYTES):
            yield group
            group, size = [], 0
        group.append(row)
        size += held
    if group:
        yield group


def commit_indexes(
    target: GraphTarget,
    cells: IndexCells,
    prior: PriorIndex,
    recent: Mapping[str, Any],
    complete: Mapping[str, Any],
    ordering: OrderingState,
    *,
    ordering_only_when_unchanged: bool = False,
    window: Any = None,
    early_rows: EarlyRows | None = None,
) -> int:
    """Write both indexes and the ordering in one transaction; returns cells written.

    With `ordering_only_when_unchanged` (a targeted refresh), a commit that would change
    no row and nothing in either root but their generation writes the ordering alone.
    `window` (session_index.RecentWindow of these values) is kept with the committed
    roots, for the next publication's `unchanged_index`.

    A row equal to its prior row already has its cells: the root links the stored cell
    and the row is neither planned nor compared, so a publication costs O(changed rows)
    beyond building the two roots.

    Rows are planned ROW_BATCH at a time, so memory holds one batch of planned cells,
    not every row's (a first sync plans them all). A row whose cell no index root links
    yet (a session new to the index) is written at once in a transaction of its batch:
    nothing reaches it before the roots below link it, so a crash before then leaves an
    unreachable cell, never an index pointing at a missing one. The cells of rows the
    current roots link (a changed row) go into the final transaction with the roots,
    held until then as texts in a temporary file (held_cells.py), not in memory.
    The caller holds the publish lock: no other publication links a row meanwhile.
    A row whose cells `early_rows` wrote while the publication ran (early_rows.py) is linked
    as it is, when `early_rows.take` allows it.
    """
    space, owner = target.space, target.owner
    array_scope = scope(space, owner, SESSION_INDEX_ARRAY_SCOPE)
    recent_cause = recent_session_index_cause(space, owner)
    all_cause = all_session_index_cause(space, owner)
    # a row of the prior table linked as it is is linked from its place there, by the
    # roots themselves (index_roots.plan_index_root): no Link nor entry here a row; the
    # others are read from the values one at a time and written a group at a time
    table = prior.rows if type(prior.rows) is PriorRows else None
    own = getattr(complete["sessions"], "table", None)  # the values' own table (a first sync's touches)
    linker = RowLinker(target, prior, early_rows, array_scope, all_cause, own if own is not table else None)
    linker.link(complete["sessions"], recent["sessions"], table)
    links, final, written = linker.links, linker.final, linker.written
    del linker
    graphs = (
        plan_index_root(recent_cause, recent, array_scope, links, table),
        plan_index_root(all_cause, complete, array_scope, links, table),
    )
    del links  # as many entries as rows: not held through the final transaction
    # the values' rows (a TableRow and its place a row, when the caller holds no other
    # reference) kept as places until the committed prior is made (committed_prior.py)
    kept = CommittedRows.of(complete["sessions"])
    complete["sessions"], recent["sessions"] = kept, ()
    children: dict[str, PlannedCell] = {}  # the roots' own (sources, checkouts)
    for graph in graphs:
        for child in graph.children:
            children.setdefault(child.id, child)
    changed, changed_rows = changed_cells(target, children), final.take_changed(target) if final is not None else None
    # nothing a reader sees changed (a refresh of an unchanged session): only the
    # observation ordering is recorded; the indexes keep their generation
    unchanged = ordering_only_when_unchanged and not changed and not changed_rows and roots_unchanged(prior, graphs)
    # the roots' stored forms made while the rows' freed heap is there to reuse (their
    # buffers would otherwise take fresh pages), then that heap released (first27)
    stored = [None] * len(graphs) if unchanged else [stored_root(target.store, space, g.root) for g in graphs]
    release_freed_memory()
    with target.store.transaction(space, target.writer) as tx:
        _check_unmoved(tx, prior)
        if unchanged:
            return _ordering_only(target, cells, prior, ordering, tx, window)
        _write_ordering(target, tx, cells.ordering, ordering)  # its buffer gone before the roots'
        for child in changed:  # children before the roots that link them
            tx.write(child.id, child.value, target.labels)
        if changed_rows:  # read from their file at the commit, a batch at a time
            tx.write_streamed(changed_rows, target.labels)
        for graph, made in zip(graphs, stored, strict=True):  # index_root_write.py
            write_root(tx, graph.root, target.labels, made)
        seq = tx.commit()
    committed = committed_prior(target, cells, complete, ordering, graphs[1], seq)  # its rows: `kept`
    committed.roots = {graph.root.id: root_digest(graph.root.value, space) for graph in graphs}
    committed.window = window
    target.committed[cells.all] = committed
    if changed_rows is not None:  # its file closed
        written += len(changed_rows)
        changed_rows.clear()
    return written + len(changed) + len(graphs) + 1


def commit_ordering(target: GraphTarget, cells: IndexCells, prior: PriorIndex, ordering: OrderingState) -> int:
    """Write the ordering alone, when the publication changes nothing a reader sees
    (unchanged_index.py decided it against `prior`); the indexes keep their generation.
    Fails, as `commit_indexes` does, when an index or the ordering moved since `prior`."""
    with target.store.transaction(target.space, target.writer) as tx:
        _check_unmoved(tx, prior)
        return _ordering_only(target, cells, prior, ordering, tx)


def _write_ordering(target: GraphTarget, tx: Any, cell: str, ordering: OrderingState) -> None:
    """The ordering's text into `cell`: as the store's stored form made from its pieces
    where the store has one (SQLite: compressed as they come, the text never held whole:
    1.2 MB and its UTF-8 at 25,000 sessions, issue 14 goal 4), else as its text."""
    made = target.store.stored_form_of_pieces(target.space, text_pieces(ordering, target.owner))
    if made is None:
        tx.write(cell, None, target.labels, text=ordering.text(target.owner))
    else:
        tx.write_stored(cell, made[0], target.labels, made[1])


def _check_unmoved(tx: Any, prior: PriorIndex) -> None:
    for cell, seen in prior.versions.items():
        if tx.observe(cell) != seen:
            raise IndexConflict(
                "publication-conflict",
                f"another publisher changed {cell} during this publication; publish again"
            )


def _ordering_only(
    target: GraphTarget, cells: IndexCells, prior: PriorIndex, ordering: OrderingState, tx: Any, window: Any = None
) -> int:
    _write_ordering(target, tx, cells.ordering, ordering)
    seq = tx.commit()
    kept_prior = _copy(prior)
    kept_prior.ordering = ordering
    kept_prior.versions[cells.ordering] = seq
    kept_prior.window = window or prior.window  # the roots held the same recent rows
    target.committed[cells.all] = kept_prior
    return 1

"""Reading the prior indexes, and committing both new indexes with the ordering state.

The prior complete index is hydrated with `manifest` links preserved, so a
publication reads every row but no transcript. The commit is one transaction: both
index roots, every row cell that changed (the two indexes share their row cells,
since their array scope is the same), and the ordering cell. It also checks that
neither index nor the ordering changed since the publication read them (another
machine sharing the store), and fails rather than overwrite what it did not see.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lib.errors import CodedError
from lib.fabric.cell_id import all_session_index_cause, cell_id, recent_session_index_cause
from lib.fabric.graph_commit import READ_BATCH
from lib.fabric.graph_plan import PlannedCell, PlannedGraph, plan_graph
from lib.fabric.graph_read import read_graph_value
from lib.fabric.ordering import OrderingState, ordering_cause
from lib.fabric.schemas import SESSION_INDEX_ARRAY_SCOPE, parse_session_index, scope
from lib.fabric.session_graph import GraphTarget
from lib.fabric.values import Link
from lib.hashing import value_hash

PRESERVED_LINK_FIELDS = frozenset({"manifest"})


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
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: list[dict[str, Any]] = field(default_factory=list)
    checkouts: list[dict[str, Any]] = field(default_factory=list)
    generation: int = 0
    versions: dict[str, int] = field(default_factory=dict)
    ordering: OrderingState = field(default_factory=OrderingState)
    dropped_rows: int = 0
    row_links: dict[str, Link] = field(default_factory=dict)  # key -> the row's stored cell
    # root cell -> the value this process committed there (not read back: a refresh
    # that changes nothing compares its roots with these, commit_indexes)
    roots: dict[str, Any] = field(default_factory=dict, compare=False)


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
    """The index as it is now. When it is still the one this process last committed
    (the three cells at the versions that commit gave them), that commit's values are
    used instead of reading and hydrating every row again: a session refresh after a
    command then costs what its own session costs, not what the whole index does."""
    committed: PriorIndex | None = target.committed.get(cells.all)
    # since the newest of its versions: its commit saw the other cells at theirs
    if committed is not None and not changed_since(
        target, max(committed.versions.values()),
        {*committed.versions, *(link.id for link in committed.row_links.values())},
    ):
        return _copy(committed)
    prior = PriorIndex()
    value, document = read_complete_index(target, cells)
    prior.versions[cells.all] = document.seq if document is not None else 0
    if value is not None:
        parsed = parse_session_index(value, bucket="all", strict=True)
        prior.rows = {row["key"]: dict(row) for row in parsed.sessions}
        prior.row_links = _row_links(document.value, value, prior.rows)
        prior.sources = [dict(r) for r in parsed.sources]
        prior.checkouts = [dict(r) for r in parsed.checkouts]
        prior.generation = parsed.generation
        prior.dropped_rows = parsed.dropped_rows
    recent = target.store.read(target.space, cells.recent)
    prior.versions[cells.recent] = recent.seq if recent is not None else 0
    if recent is not None and isinstance(recent.value, dict):
        generation = recent.value.get("generation")
        if type(generation) is int and generation > prior.generation:
            prior.generation = generation
    ordering = target.store.read(target.space, cells.ordering)
    prior.versions[cells.ordering] = ordering.seq if ordering is not None else 0
    if ordering is not None:
        prior.ordering = OrderingState.from_value(ordering.value)
    return prior


def prior_is_current(target: GraphTarget, cells: IndexCells, prior: PriorIndex) -> bool:
    """No index or ordering cell moved since `prior` was read (three version reads)."""
    return all(target.store._read_version(target.space, cell) == seen for cell, seen in prior.versions.items())


def changed_since(target: GraphTarget, seq: int, cells: set[str]) -> bool:
    """Whether any of `cells` was written after `seq` (by anyone: the change feed)."""
    return any(cell in cells for cell, _ in target.store.changes_since(target.space, seq))


def _copy(prior: PriorIndex) -> PriorIndex:
    """A prior a publication may use as its own: containers copied, rows shared (a
    publication copies a row before it changes it)."""
    return PriorIndex(
        rows=dict(prior.rows), sources=list(prior.sources), checkouts=list(prior.checkouts),
        generation=prior.generation, versions=dict(prior.versions), ordering=prior.ordering,
        dropped_rows=prior.dropped_rows, row_links=dict(prior.row_links), roots=prior.roots,
    )


def _row_links(stored: Any, hydrated: Any, rows: Mapping[str, Any]) -> dict[str, Link]:
    """The stored cell of each valid prior row: the root's link at the row's position."""
    links = stored.get("sessions") if isinstance(stored, dict) else None
    values = hydrated.get("sessions") if isinstance(hydrated, dict) else None
    if not isinstance(links, list) or not isinstance(values, list) or len(links) != len(values):
        return {}
    out: dict[str, Link] = {}
    for link, row in zip(links, values, strict=True):
        if isinstance(link, Link) and isinstance(row, dict) and row.get("key") in rows:
            out.setdefault(row["key"], link)
    return out


def commit_indexes(
    target: GraphTarget,
    cells: IndexCells,
    prior: PriorIndex,
    recent: Mapping[str, Any],
    complete: Mapping[str, Any],
    ordering: OrderingState,
    *,
    ordering_only_when_unchanged: bool = False,
) -> int:
    """Write both indexes and the ordering in one transaction; returns cells written.

    With `ordering_only_when_unchanged` (a targeted refresh), a commit that would change
    no row and nothing in either root but their generation writes the ordering alone.

    A row equal to its prior row already has its cells: the root links the stored cell
    and the row is neither planned nor compared, so a publication costs O(changed rows)
    beyond building the two roots.
    """
    space, owner = target.space, target.owner
    array_scope = scope(space, owner, SESSION_INDEX_ARRAY_SCOPE)
    kept = {
        key: prior.row_links[key]
        for key, row in ((r["key"], r) for r in complete["sessions"])
        if key in prior.row_links and same_row(row, prior.rows[key])
    }
    graphs = (
        _plan_index(recent_session_index_cause(space, owner), recent, array_scope, kept),
        _plan_index(all_session_index_cause(space, owner), complete, array_scope, kept),
    )
    children: dict[str, PlannedCell] = {}
    for graph in graphs:
        for child in graph.children:
            children.setdefault(child.id, child)
    changed = _changed(target, children)
    with target.store.transaction(space, target.writer) as tx:
        for cell, seen in prior.versions.items():
            now = tx.observe(cell)
            if now != seen:
                raise IndexConflict(
                    "publication-conflict",
                    f"another publisher changed {cell} during this publication; publish again"
                )
        if ordering_only_when_unchanged and not changed and _roots_unchanged(prior, graphs):
            # nothing a reader sees changed (a refresh of an unchanged session): only
            # the observation ordering is recorded; the indexes keep their generation
            tx.write(cells.ordering, ordering.to_value(owner), target.labels)
            seq = tx.commit()
            kept_prior = _copy(prior)
            kept_prior.ordering = ordering
            kept_prior.versions[cells.ordering] = seq
            target.committed[cells.all] = kept_prior
            return 1
        for child in changed:  # children before the roots that link them
            tx.write(child.id, child.value, target.labels)
        for graph in graphs:
            tx.write(graph.root.id, graph.root.value, target.labels)
        tx.write(cells.ordering, ordering.to_value(owner), target.labels)
        seq = tx.commit()
    target.committed[cells.all] = _committed(cells, complete, ordering, graphs[1], seq)
    target.committed[cells.all].roots = {graph.root.id: graph.root.value for graph in graphs}
    return len(changed) + len(graphs) + 1


def _committed(
    cells: IndexCells, complete: Mapping[str, Any], ordering: OrderingState, graph: PlannedGraph, seq: int
) -> PriorIndex:
    """What `read_prior` would read back right after this commit."""
    rows = {row["key"]: row for row in complete["sessions"]}
    links = graph.root.value["sessions"]
    return PriorIndex(
        rows=rows,
        sources=list(complete["sources"]),
        checkouts=list(complete["checkouts"]),
        generation=complete["generation"],
        versions={cells.all: seq, cells.recent: seq, cells.ordering: seq},
        ordering=ordering,
        row_links={row["key"]: link for row, link in zip(complete["sessions"], links, strict=True)},
    )


def _plan_index(
    cause: Any, value: Mapping[str, Any], array_scope: Any, kept: Mapping[str, Link]
) -> PlannedGraph:
    """Plan an index whose kept rows are linked, not planned: rows are keyed, so a row's
    cell does not depend on its siblings and the planner's links for the other rows
    stay what they would be in the full plan."""
    rows = value["sessions"]
    planned = plan_graph(cause, {**value, "sessions": [r for r in rows if r["key"] not in kept]}, array_scope)
    fresh = iter(planned.root.value["sessions"])
    links = [kept[r["key"]] if r["key"] in kept else next(fresh) for r in rows]
    root = PlannedCell(planned.root.id, planned.root.cause, {**planned.root.value, "sessions": links})
    return PlannedGraph(planned.space, root, planned.children)


_PER_GENERATION = frozenset({"generation", "generatedAt"})


def _roots_unchanged(prior: PriorIndex, graphs: tuple[PlannedGraph, ...]) -> bool:
    """Both planned roots equal the ones this process committed (the prior still at the
    versions that commit gave them) but for their generation and its time."""
    for graph in graphs:
        stored = prior.roots.get(graph.root.id)
        if stored is None or stored.keys() != graph.root.value.keys():
            return False
        if any(stored[k] != v for k, v in graph.root.value.items() if k not in _PER_GENERATION):
            return False
    return True


def same_row(row: Mapping[str, Any], prior: Mapping[str, Any]) -> bool:
    """Equal as Fabric values; rows copied from the prior row compare by identity."""
    if row.keys() != prior.keys():
        return False
    if all(row[k] is prior[k] for k in row):
        return True
    return value_hash(row) == value_hash(prior)


def _changed(target: GraphTarget, children: Mapping[str, PlannedCell]) -> list[PlannedCell]:
    """The planned children whose stored value differs (rows most often stay the same)."""
    ids = list(children)
    out = []
    for start in range(0, len(ids), READ_BATCH):
        batch = ids[start : start + READ_BATCH]
        stored = target.store.read_many(target.space, batch)
        for cid in batch:
            child, document = children[cid], stored.get(cid)
            if document is None or value_hash(document.value) != value_hash(child.value):
                out.append(child)
    return out

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

from lib.fabric.cell_id import all_session_index_cause, cell_id, recent_session_index_cause
from lib.fabric.graph_commit import READ_BATCH
from lib.fabric.graph_plan import PlannedCell, plan_graph
from lib.fabric.graph_read import read_graph_value
from lib.fabric.ordering import OrderingState, ordering_cause
from lib.fabric.schemas import SESSION_INDEX_ARRAY_SCOPE, parse_session_index, scope
from lib.fabric.session_graph import GraphTarget
from lib.hashing import value_hash

PRESERVED_LINK_FIELDS = frozenset({"manifest"})


class IndexConflict(Exception):
    code = "publication-conflict"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


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


def read_complete_index(target: GraphTarget, cells: IndexCells) -> tuple[Any, int]:
    """The hydrated complete index value (manifests as links) and its root's seq."""
    document = target.store.read(target.space, cells.all)
    if document is None:
        return None, 0
    value = read_graph_value(
        target.store, target.space, cells.all, preserve_link_fields=PRESERVED_LINK_FIELDS
    )
    return value, document.seq


def read_prior(target: GraphTarget, cells: IndexCells) -> PriorIndex:
    prior = PriorIndex()
    value, prior.versions[cells.all] = read_complete_index(target, cells)
    if value is not None:
        parsed = parse_session_index(value, bucket="all")
        prior.rows = {row["key"]: dict(row) for row in parsed.sessions}
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


def commit_indexes(
    target: GraphTarget,
    cells: IndexCells,
    prior: PriorIndex,
    recent: Mapping[str, Any],
    complete: Mapping[str, Any],
    ordering: OrderingState,
) -> int:
    """Write both indexes and the ordering in one transaction; returns cells written."""
    space, owner = target.space, target.owner
    array_scope = scope(space, owner, SESSION_INDEX_ARRAY_SCOPE)
    graphs = (
        plan_graph(recent_session_index_cause(space, owner), recent, array_scope),
        plan_graph(all_session_index_cause(space, owner), complete, array_scope),
    )
    children: dict[str, PlannedCell] = {}
    for graph in graphs:
        for child in graph.children:
            children.setdefault(child.id, child)
    changed = _changed(target, children)
    with target.store.transaction(space, target.writer) as tx:
        for cell, seen in prior.versions.items():
            document = tx.read(cell)
            now = document.seq if document is not None else 0
            if now != seen:
                raise IndexConflict(
                    f"another publisher changed {cell} during this publication; publish again"
                )
        for child in changed:  # children before the roots that link them
            tx.write(child.id, child.value, target.labels)
        for graph in graphs:
            tx.write(graph.root.id, graph.root.value, target.labels)
        tx.write(cells.ordering, ordering.to_value(owner), target.labels)
        tx.commit()
    return len(changed) + len(graphs) + 1


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

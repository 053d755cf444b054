"""The index roots around rows already planned: planning them, and whether a commit
changes them (index_store.commit_indexes; session 24).

`index_unchanged` tells, before either root is built, that a publication changes
nothing a reader sees: then the commit writes the ordering alone
(index_store.commit_ordering). Building both roots over every row (each row's time read
from its packed block), planning the sources and checkouts and reading them back to
compare took about 2 ms of a refresh on 50 rows, for a commit that most often (a
refresh of a session its command did not change) writes only the ordering. It decides
against what this process committed last (`PriorIndex.roots`, kept only while the
three cells are at the versions that commit gave them), and says no whenever it cannot
tell: then the commit builds and compares as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lib.fabric.graph_commit import READ_BATCH
from lib.fabric.graph_plan import PlannedCell, PlannedGraph, plan_graph
from lib.fabric.root_links import RootLinks
from lib.fabric.row_list import table_cells
from lib.fabric.same_rows import same_row
from lib.fabric.session_graph import GraphTarget
from lib.fabric.values import Link
from lib.hashing import value_hash

if TYPE_CHECKING:
    from lib.fabric.index_store import PriorIndex
    from lib.fabric.prior_table import PriorRows


def index_unchanged(
    prior: PriorIndex,
    rows: Mapping[str, Mapping[str, Any]],
    sources: Sequence[Mapping[str, Any]],
    checkouts: Sequence[Mapping[str, Any]],
    generated_at: datetime,
) -> bool:
    """Whether roots built at `generated_at` from these rows, source rows (in any order)
    and checkout rows would equal the prior's committed ones but for their generation
    and its time, and no row cell would change: the same rows (each the prior's own
    object or equal to it, `same_row`), source and checkout rows of equal value hashes,
    and the same rows inside the recent window at `generated_at`."""
    if not prior.roots or prior.window is None or not prior.window.holds(generated_at):
        return False
    if len(rows) != len(prior.rows):
        return False
    for key, row in rows.items():
        before = prior.rows.get(key)
        if before is None or (row is not before and not same_row(row, before)):
            return False
    ordered = sorted(sources, key=lambda r: r["sourceId"])  # as index_values orders them
    return value_hash(ordered) == value_hash(prior.sources) and value_hash(list(checkouts)) == value_hash(
        prior.checkouts)


def plan_index_root(
    cause: Any, value: Mapping[str, Any], array_scope: Any, links: Mapping[str, Link],
    table: PriorRows | None = None,
) -> PlannedGraph:
    """Plan an index root whose rows are all planned already: its `sessions` are the
    rows' links (rows are keyed, so a row's cell does not depend on its siblings and the
    links are what the full plan would give), held as their cells' IDs (RootLinks): a row
    of the prior `table` linked as it is by its place there (row_list.table_cells), any other by
    `links`. Its sources and checkouts are planned here."""
    planned = plan_graph(cause, {**value, "sessions": []}, array_scope)
    held = RootLinks(array_scope["spaceDid"])
    for cell, row in table_cells(value["sessions"], table):  # a table's row held as its place not made
        if cell is not None:
            held.add_id(cell)
        else:
            held.add(links[row["key"]])  # type: ignore[index]
    root = PlannedCell(planned.root.id, planned.root.cause, {**planned.root.value, "sessions": held})
    return PlannedGraph(planned.space, root, planned.children)


_PER_GENERATION = frozenset({"generation", "generatedAt"})


def root_digest(value: Mapping[str, Any], space: str) -> bytes:
    """A digest of an index root's value in `space` but for its generation and its time
    (what `roots_unchanged` compares): this process keeps it, not the root's N links.
    Its links, a RootLinks or any list, digested as a RootLinks (equal links, equal digests)."""
    rest = {k: v for k, v in value.items() if k not in _PER_GENERATION and k != "sessions"}
    sessions = value.get("sessions")
    if not isinstance(sessions, RootLinks):
        held = RootLinks(space)
        for link in sessions or ():
            held.add(link)
        sessions = held
    return hashlib.sha256(value_hash(rest) + sessions.digest()).digest()


def roots_unchanged(prior: PriorIndex, graphs: tuple[PlannedGraph, ...]) -> bool:
    """Both planned roots equal the ones this process committed (the prior still at the
    versions that commit gave them) but for their generation and its time."""
    return all(prior.roots.get(graph.root.id) == root_digest(graph.root.value, graph.space) for graph in graphs)


def changed_cells(target: GraphTarget, children: Mapping[str, PlannedCell]) -> list[PlannedCell]:
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

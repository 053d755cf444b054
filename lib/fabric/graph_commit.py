"""Commit a planned cell graph in one transaction (spec "Graph commits and hydration").

`commit_graph(store, space, writer, labels, graph)` writes the cells of a PlannedGraph,
children before the parents that link to them, and commits once:

  - a cell whose stored value has the planned value's hash is left alone (not rewritten);
  - a stored object whose new value is an object gets a field-level patch: changed keys
    set, keys the new value lacks deleted. The patch applies at commit to the value then
    stored, so fields another writer set meanwhile survive, and the document keeps its
    labels;
  - a new cell, a value replacing another type, and a non-object value are written whole
    (new cells get `labels`; rewritten cells keep theirs).

Existing documents are read in batches with `Store.read_many`, outside the transaction's
read set, which is what lets concurrent field-level patches merge. A failed commit
raises the store's error (ConflictError, PreconditionFailed, WriteDenied, StoreError:
each with a stable `code`) and is not retried; it changes nothing.

`stage_graph(store, tx, graph, labels)` buffers the same changes in a caller's
transaction instead, for a commit that holds more than one graph or other writes.

Fast paths for callers: `known_unchanged` maps cell IDs to value hashes the caller knows
are stored (e.g. `CommitResult.hashes` of an earlier commit in this process); such cells
are skipped without a read. `skip_if_root_exists=True` is for content-addressed graphs
(chunks, manifest versions): when the root exists, every child exists with the same
value, so nothing is read or written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lib.errors import CodedError
from lib.fabric.graph_plan import PlannedCell, PlannedGraph
from lib.fabric.store import Labels, Store, Transaction
from lib.hashing import value_hash

READ_BATCH = 500  # cells per read_many call: bounds the decoded documents held at once


class GraphCommitError(CodedError, ValueError):
    """A graph that cannot be committed as asked. `code` is stable."""



@dataclass(frozen=True, slots=True)
class CommitResult:
    """Cell IDs written (whole or patched) and left unchanged, in graph order; `seq` is the
    commit's sequence number, None when nothing needed writing. `hashes` holds the value
    hash of every cell compared, for `known_unchanged` of a later commit."""

    written: tuple[str, ...]
    unchanged: tuple[str, ...]
    seq: int | None
    hashes: dict[str, bytes] = field(default_factory=dict)


def commit_graph(
    store: Store,
    space: str,
    writer: str,
    labels: Labels | None,
    graph: PlannedGraph,
    *,
    known_unchanged: Mapping[str, bytes] | None = None,
    skip_if_root_exists: bool = False,
) -> CommitResult:
    """Write graph's cells that differ from the stored ones, in one transaction."""
    _check_space(graph, space)
    if skip_if_root_exists and store.read(space, graph.root.id) is not None:
        return CommitResult((), tuple(c.id for c in graph.cells()), None)
    with store.transaction(space, writer) as tx:
        staged = stage_graph(store, tx, graph, labels, known_unchanged=known_unchanged)
        seq = tx.commit() if staged.written else None
    return CommitResult(staged.written, staged.unchanged, seq, staged.hashes)


def stage_graph(
    store: Store,
    tx: Transaction,
    graph: PlannedGraph,
    labels: Labels | None,
    *,
    known_unchanged: Mapping[str, bytes] | None = None,
) -> CommitResult:
    """Buffer graph's changed cells in tx (the caller commits; `seq` is None).

    For callers that commit a graph with other writes or preconditions in one
    transaction. Two graphs sharing cells (both session indexes share their rows) stage
    the second with `known_unchanged=first.hashes`, so a shared cell is staged once.
    """
    _check_space(graph, tx.space)
    known = known_unchanged or {}
    written: list[str] = []
    unchanged: list[str] = []
    hashes: dict[str, bytes] = {}
    cells = graph.cells()
    for start in range(0, len(cells), READ_BATCH):
        batch = cells[start : start + READ_BATCH]
        to_read: list[PlannedCell] = []
        for cell in batch:
            digest = hashes[cell.id] = value_hash(cell.value)
            if known.get(cell.id) == digest:
                unchanged.append(cell.id)
            else:
                to_read.append(cell)
        stored = store.read_many(tx.space, [c.id for c in to_read]) if to_read else {}
        for cell in to_read:
            document = stored.get(cell.id)
            if document is None:
                tx.write(cell.id, cell.value, labels)
            elif value_hash(document.value) == hashes[cell.id]:
                unchanged.append(cell.id)
                continue
            elif isinstance(document.value, dict) and isinstance(cell.value, dict):
                changed, removed = field_changes(document.value, cell.value)
                tx.patch(cell.id, set=changed, delete=removed)
            else:
                tx.write(cell.id, cell.value)  # keeps the cell's labels
            written.append(cell.id)
    return CommitResult(tuple(written), tuple(unchanged), None, hashes)


def _check_space(graph: PlannedGraph, space: str) -> None:
    if graph.space != space:
        raise GraphCommitError(
            "space-mismatch",
            f"the graph links cells in {graph.space}, not in the target space {space}",
        )


def field_changes(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """(keys of new whose value differs from old's, with their values; keys only old has)."""
    changed = {k: v for k, v in new.items() if k not in old or not same_value(old[k], v)}
    removed = [k for k in old if k not in new]
    return changed, removed


_EXACT = frozenset({str, int, bool, type(None)})


def same_value(a: Any, b: Any) -> bool:
    """Equal as Fabric values: same value hash (so 1 and True, 0.0 and -0.0 differ)."""
    if type(a) is type(b) and type(a) in _EXACT:
        return a == b
    return value_hash(a) == value_hash(b)

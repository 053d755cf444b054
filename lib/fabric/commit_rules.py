"""The commit rules every store backend enforces (store.py): a transaction's buffered
operations, the plan it hands its backend, and `resolve_commit`, which checks the plan
against the current rows inside the backend's write lock and says what to write."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lib.fabric import value_decoding, values
from lib.fabric.documents import Labels
from lib.fabric.store_errors import ConflictError, PreconditionFailed, WriteDenied
from lib.hashing import value_hash


@dataclass(frozen=True, slots=True)
class Row:
    """What a backend knows about a cell: `version` is the seq of its last write or
    delete (0 for a cell never written), `live` is False once deleted."""

    version: int
    labels: Labels
    live: bool


# Buffered operations. Values are encoded when buffered: errors surface at the call,
# and later changes to the caller's objects cannot leak into the commit.
@dataclass(slots=True)
class Write:
    text: str
    labels: Labels | None
    # the backend's stored form of text, made ahead by the caller (Store.stored_forms),
    # or None: the backend makes it at commit
    stored: str | bytes | None = None


@dataclass(slots=True)
class Patch:
    set: dict[str, str]  # key -> fvj1 text of its new value
    delete: set[str]


@dataclass(slots=True)
class Delete:
    pass


Op = Write | Patch | Delete


@dataclass(slots=True)
class CommitPlan:
    """Everything a transaction asks a backend to check and apply at commit."""

    space: str
    writer: str
    reads: dict[str, int] = field(default_factory=dict)  # cell -> version seen
    require_absent: set[str] = field(default_factory=set)
    require_hash: dict[str, bytes] = field(default_factory=dict)
    ops: dict[str, Op] = field(default_factory=dict)
    # the writer expects every cell written to be new (Transaction.expect_new_cells)
    expect_new: bool = False
    # whole-value writes given as (cell ID, fvj1 text) pairs read only at commit
    # (Transaction.write_streamed), each with its labels: cells no op above writes
    streamed: list[tuple[Iterable[tuple[str, str]], Labels | None]] = field(default_factory=list)

    def cells(self) -> set[str]:
        return set(self.reads) | self.require_absent | set(self.require_hash) | set(self.ops)


@dataclass(frozen=True, slots=True)
class RowWrite:
    cell_id: str
    labels: Labels
    text: str | None  # None deletes
    stored: str | bytes | None = None  # Write.stored, passed through


def resolve_commit(
    plan: CommitPlan, rows: Mapping[str, Row], load_text: Callable[[str], str]
) -> list[RowWrite]:
    """Check plan against the current rows (inside the backend's write lock) and
    return the rows to write; raises ConflictError, PreconditionFailed or WriteDenied.

    rows holds every cell of plan.cells() that has a row; load_text(cell) returns
    the stored text of a live cell, and is called only for patches and hash checks.
    """
    for cell, seen in plan.reads.items():
        row = rows.get(cell)
        now = row.version if row else 0
        if now != seen:
            raise ConflictError("store-conflict",
                f"cell changed after this transaction read it (version {seen} -> {now}): {cell}"
            )
    for cell in plan.require_absent:
        row = rows.get(cell)
        if row is not None and row.live:
            raise PreconditionFailed("store-precondition-failed", f"cell is required to be absent but exists: {cell}")
    for cell, expected in plan.require_hash.items():
        row = rows.get(cell)
        if row is None or not row.live:
            raise PreconditionFailed("store-precondition-failed", f"cell is required to hold a value but is absent: {cell}")
        if value_hash(value_decoding.loads(load_text(cell))) != expected:
            raise PreconditionFailed("store-precondition-failed",
                f"cell value does not have the required hash {expected.hex()}: {cell}"
            )
    out = []
    for cell, op in plan.ops.items():
        row = rows.get(cell)
        if row is not None and plan.writer not in row.labels.integrity:
            raise WriteDenied("store-write-denied", f"writer {plan.writer} is not allowed to change cell {cell}")
        if isinstance(op, Delete):
            if row is not None and row.live:
                out.append(RowWrite(cell, row.labels, None))
            continue
        if isinstance(op, Write):
            labels = op.labels or (row.labels if row else Labels.owned_by(plan.writer))
            out.append(RowWrite(cell, labels, op.text, op.stored))
            continue
        if row is None or not row.live:
            raise PreconditionFailed("store-precondition-failed", f"cannot patch fields of an absent cell: {cell}")
        value = value_decoding.loads(load_text(cell))
        out.append(RowWrite(cell, row.labels, values.dumps(apply_patch(cell, value, op))))
    return out


def streamed_writes(
    plan: CommitPlan, cells: list[tuple[str, str]], labels: Labels | None, rows: Mapping[str, Row]
) -> list[RowWrite]:
    """resolve_commit's answer for a batch of a plan's streamed writes (`rows`: those
    cells' rows, read inside the backend's write lock): WriteDenied for a cell whose
    labels do not name the writer, else a write of each, with the labels given or the
    cell's own (a new cell's: the writer's)."""
    out = []
    for cell, text in cells:
        row = rows.get(cell)
        if row is not None and plan.writer not in row.labels.integrity:
            raise WriteDenied("store-write-denied", f"writer {plan.writer} is not allowed to change cell {cell}")
        out.append(RowWrite(cell, labels or (row.labels if row else Labels.owned_by(plan.writer)), text))
    return out


def apply_patch(cell: str, value: Any, patch: Patch) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PreconditionFailed("store-precondition-failed", f"cannot patch fields of a cell that holds no object: {cell}")
    result = {k: v for k, v in value.items() if k not in patch.delete}
    for key, text in patch.set.items():
        result[key] = value_decoding.loads(text)
    return result

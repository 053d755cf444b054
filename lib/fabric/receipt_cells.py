"""Receipt cells and the receipt index (spec "Receipt"; docs/command-path.md).

Each command has a deterministic receipt cell (`command_receipt_cause`, qualified by
its producer's queue when named) holding `receipt.to_wire()`. The receipt index
(`receipts_cause`) holds at most MAX_ROWS summary rows, the most recently appended
last, each linking its receipt cell; a row's identity is (producer, commandId), so
republishing a command removes its row and appends the new one.

Receipt writes are group-committed (`ReceiptCommits`): writes arriving while a commit
is on its way share the next one, so concurrent commands share one index rewrite. A
commit is one read-modify-commit under the target's receipts lock
(`target.receipts_lock`, the store's `receipts` lock: processes take turns). It is not
the publish lock: receipt cells and session index cells are disjoint, so a receipt
never waits behind a session index commit (a long `sync` delays no receipt). The
receipt cells and the index commit in one transaction, so a reader never sees a row
whose receipt was not written. A ConflictError (a writer that does not take the lock
moved a cell this commit read) is retried a few times.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lib.fabric import values
from lib.fabric.cell_id import cell_id, command_receipt_cause, link_to, receipts_cause
from lib.fabric.graph_commit import stage_graph
from lib.fabric.graph_plan import PlannedGraph, plan_graph
from lib.fabric.graph_read import GraphReadError, read_graph_value
from lib.fabric.index_store import changed_since
from lib.fabric.schemas import (
    COMMAND_RECEIPT_ARRAY_SCOPE,
    COMMAND_RECEIPTS_SCHEMA,
    RECEIPT_INDEX_ARRAY_SCOPE,
    scope,
)
from lib.fabric.store import Transaction
from lib.fabric.store_errors import ConflictError, PreconditionFailed
from lib.fabric.target_errors import TargetError
from lib.fabric.values import Link
from lib.group_commit import GroupCommit
from lib.receipts import (
    RECEIPT_SCHEMA,
    CommandReceipt,
    ReceiptValidationError,
    check_utc_iso,
    format_utc_iso,
    parse_command_receipt,
)

if TYPE_CHECKING:
    from lib.fabric.target import FabricTarget

MAX_ROWS = 200
ATTEMPTS = 5  # commits tried when a concurrent writer moves the index
_ROW_FIELDS = ("commandId", "producer", "sourceId", "nativeSessionId", "status", "error")

RowIdentity = tuple[str | None, str]


def receipt_cell_id(space: str, owner: str, command_id: str, producer: str | None = None) -> str:
    return cell_id(command_receipt_cause(space, owner, command_id=command_id, producer=producer))


def plan_receipt(space: str, owner: str, receipt: CommandReceipt, wire: dict[str, Any]) -> PlannedGraph:
    """The receipt cell's graph from `wire` (`receipt.to_wire()`; a result's arrays
    become element cells)."""
    identity: dict[str, Any] = {"commandId": receipt.command_id}
    if receipt.producer is not None:
        identity["producer"] = receipt.producer
    return plan_graph(
        command_receipt_cause(space, owner, command_id=receipt.command_id, producer=receipt.producer),
        wire,
        scope(space, owner, COMMAND_RECEIPT_ARRAY_SCOPE, **identity),
    )


def read_receipt(
    target: FabricTarget, command_id: str, producer: str | None = None
) -> CommandReceipt | None:
    """The validated receipt in the command's cell, None when there is none."""
    cell = receipt_cell_id(target.space, target.owner, command_id, producer)
    if target.store.read(target.space, cell) is None:
        return None
    try:
        value = read_graph_value(target.store, target.space, cell)
        receipt = parse_command_receipt(value, command_id=command_id, context="stored receipt")
    except (GraphReadError, ReceiptValidationError) as exc:
        raise TargetError(
            "invalid-receipt", f"the receipt cell of command {command_id} is invalid: {exc}"
        ) from None
    if receipt.producer != producer:
        raise TargetError(
            "invalid-receipt",
            f"the receipt cell of command {command_id} names producer "
            f"{receipt.producer!r}, not {producer!r}",
        )
    return receipt


# -- the index ---------------------------------------------------------------------------


def row_identity(row: dict[str, Any]) -> RowIdentity:
    return (row.get("producer"), row["commandId"])


def index_row(target: FabricTarget, wire: dict[str, Any], updated_at: str, cell: str) -> dict[str, Any]:
    """The summary row of a receipt (`wire`, its `to_wire()`) in `cell`, updated at
    `updated_at` (one commit's rows share its time)."""
    row = {name: wire[name] for name in _ROW_FIELDS if name in wire}
    row["updatedAt"] = updated_at
    row["receipt"] = link_to(cell, target.space)
    return row


def row_problem(row: Any, space: str, owner: str) -> str | None:
    """Why a stored index row cannot be used, or None when it can."""
    if not isinstance(row, dict):
        return "a row is an object"
    # the row repeats the receipt's fields, so the receipt's own check judges them
    summary = {name: row[name] for name in _ROW_FIELDS if name in row}
    try:
        parse_command_receipt({"schema": RECEIPT_SCHEMA, **summary}, context="receipt row")
    except ReceiptValidationError as exc:
        return exc.message
    try:
        check_utc_iso(row.get("updatedAt") if isinstance(row.get("updatedAt"), str) else "")
    except ValueError:
        return f"row {row['commandId']} has no ISO updatedAt"
    expected = receipt_cell_id(space, owner, row["commandId"], row.get("producer"))
    link = row.get("receipt")
    if not isinstance(link, Link) or link != link_to(expected, space):
        return f"row {row['commandId']} does not link its receipt cell"
    return None


def parse_receipt_index(value: Any, space: str, owner: str) -> list[dict[str, Any]]:
    """The usable rows of a stored index, oldest first (None: no index yet).

    A value that is not a current-schema index, or that holds one command twice, is
    `malformed-receipt-index`: a rewrite would lose what it cannot read. Rows that fail
    validation are dropped, so a rewrite never carries them on.
    """
    if value is None:
        return []
    if not isinstance(value, dict) or value.get("schema") != COMMAND_RECEIPTS_SCHEMA:
        raise _malformed("it is not a receipt index of the current schema")
    stored = value.get("receipts")
    if not isinstance(stored, list):
        raise _malformed("its receipts are not a list")
    rows = [row for row in stored if row_problem(row, space, owner) is None]
    seen: set[RowIdentity] = set()
    for row in rows:
        if row_identity(row) in seen:
            raise _malformed(f"command {row['commandId']} has two rows")
        seen.add(row_identity(row))
    return rows


def _malformed(why: str) -> TargetError:
    return TargetError(
        "malformed-receipt-index",
        f"the receipt index cannot be read ({why}); it was left unchanged",
    )


def with_row(rows: list[dict[str, Any]], row: dict[str, Any]) -> list[dict[str, Any]]:
    """rows without row's command, then row, keeping the most recent MAX_ROWS."""
    kept = [r for r in rows if row_identity(r) != row_identity(row)]
    kept.append(row)
    return kept[-MAX_ROWS:]


def read_index_rows(target: FabricTarget) -> list[dict[str, Any]]:
    """The index rows, validated, oldest first (each `receipt` left a Link)."""
    return parse_receipt_index(_read_index(target), target.space, target.owner)


def _read_index(target: FabricTarget) -> Any:
    cell = target.receipt_cell_id()
    if target.store.read(target.space, cell) is None:
        return None
    try:
        return read_graph_value(
            target.store, target.space, cell, preserve_link_fields={"receipt"}
        )
    except GraphReadError as exc:
        raise _malformed(exc.message) from None


# -- writing -----------------------------------------------------------------------------


def publish_receipt(target: FabricTarget, receipt: CommandReceipt) -> None:
    """Write the receipt cell (replacing it) and its index row, in one commit."""
    target.receipt_commits.submit(ReceiptWrite(receipt, claim=False))


def claim_receipt(target: FabricTarget, receipt: CommandReceipt) -> bool:
    """Write an in-flight receipt only if the command has none: True when this process
    now holds the claim, False when another receipt is already there."""
    if receipt.status != "in-flight":
        raise TargetError(
            "invalid-claim",
            f"a claim is an in-flight receipt; command {receipt.command_id} is {receipt.status}",
        )
    # no read first: the worker has just read the cell (`read_receipt`), and the commit
    # reads it again in its transaction, where the answer holds (`accepted`)
    return target.receipt_commits.submit(ReceiptWrite(receipt, claim=True))


@dataclass(eq=False)
class ReceiptWrite:
    """One receipt to write; a claim only where the command has no receipt yet.
    `accepted` is the outcome: False for a claim another receipt was already there for."""

    receipt: CommandReceipt
    claim: bool
    accepted: bool = True


class ReceiptCommits:
    """The receipt writes of one target, committed together (a group commit): writes
    that arrive while a commit is on its way wait and go into the next one, so
    concurrent commands share one index rewrite and one store commit. Each caller
    returns once its own write is committed, or raises what its commit raised."""

    def __init__(self, target: FabricTarget) -> None:
        self._group: GroupCommit[ReceiptWrite] = GroupCommit(lambda writes: commit_receipts(target, writes))

    def submit(self, write: ReceiptWrite) -> bool:
        self._group.submit(write)
        return write.accepted


@dataclass
class IndexCache:
    """The index as this process last committed it: its root's version, and per row (by
    identity, oldest first) the row, the link to its cell and that link's fvj1 text.
    While the root is still at that version nobody else wrote it (nor any row cell: the
    change feed says), so the next commit plans and writes only the new rows and the
    root: no 200 rows re-read, re-validated or re-planned (a row's cell is named by its
    command, not its position, so the other rows' links stay as they are), and the root's
    text is assembled from the kept link texts. Held in dicts, so a commit's cost does
    not grow with the rows it keeps: copied whole (in C), changed only at its new rows."""

    version: int
    rows: dict[RowIdentity, dict[str, Any]]
    links: dict[RowIdentity, Link]
    texts: dict[RowIdentity, str]
    cells: set[str]  # every link's cell id
    counts: dict[str, int]  # rows per command id (two producers may share one)
    shared: int = 0  # command ids with more than one row

    @classmethod
    def of(cls, rows: list[dict[str, Any]], links: list[Link]) -> IndexCache:
        cache = cls(0, {}, {}, {}, set(), {})
        for row, link in zip(rows, links, strict=True):
            cache.append(row, link)
        return cache

    def copy(self) -> IndexCache:
        return IndexCache(
            0, dict(self.rows), dict(self.links), dict(self.texts), set(self.cells), dict(self.counts), self.shared
        )

    def append(self, row: dict[str, Any], link: Link) -> None:
        identity = row_identity(row)
        self.remove(identity)
        self.rows[identity], self.links[identity], self.texts[identity] = row, link, values.dumps(link)
        self.cells.add(link.id)
        count = self.counts[identity[1]] = self.counts.get(identity[1], 0) + 1
        self.shared += count == 2

    def remove(self, identity: RowIdentity) -> None:
        if identity in self.rows:
            del self.rows[identity], self.texts[identity]
            self.cells.discard(self.links.pop(identity).id)
            count = self.counts[identity[1]] = self.counts[identity[1]] - 1
            self.shared -= count == 1
            if not count:
                del self.counts[identity[1]]

    def keep_last(self, count: int) -> None:
        while len(self.rows) > count:
            self.remove(next(iter(self.rows)))

    def shared_command(self) -> bool:
        """Whether two rows share a command id."""
        return self.shared > 0


def commit_receipts(target: FabricTarget, writes: list[ReceiptWrite]) -> None:
    """Write the receipts and their index rows in one commit, under the receipts lock;
    a claim whose command already has a receipt is left out (`accepted` False)."""
    with target.receipts_lock:
        for attempt in range(ATTEMPTS):
            try:
                with target.store.transaction(target.space, target.writer) as tx:
                    # in the read set: a writer that moves the index root fails this commit
                    version = tx.observe(target.receipt_cell_id())
                    now = format_utc_iso(target.clock())  # the commit's rows share its time
                    rows = _stage_receipts(target, tx, writes, now)
                    if not rows:
                        return
                    cached = target.receipt_index_cache
                    cache = None
                    if cached is not None and cached.version == version and not changed_since(
                        target.graphs, version, cached.cells
                    ):
                        cache = _stage_rows(target, tx, cached, rows, now)
                    if cache is None:
                        cache = _stage_whole_index(target, tx, rows, now)
                    cache.version = tx.commit()
                target.receipt_index_cache = cache
                return
            except (ConflictError, PreconditionFailed):
                # another writer (one that does not take the lock) moved a cell: read again
                target.receipt_index_cache = None
                if attempt == ATTEMPTS - 1:
                    raise


def _stage_receipts(target: FabricTarget, tx: Transaction, writes: list[ReceiptWrite], now: str) -> list[dict[str, Any]]:
    """Stage the receipt cells (a claim only where no receipt is), all at once in the
    order planned (one read of stored cells a batch, not one a receipt); their rows."""
    rows, cells, planned = [], [], set()
    for write in writes:
        wire = write.receipt.to_wire()
        graph = plan_receipt(target.space, target.owner, write.receipt, wire)
        if write.claim:
            # read, so a claim committed meanwhile fails this commit (one staged earlier in this batch: too)
            write.accepted = graph.root.id not in planned and tx.read(graph.root.id) is None
            if not write.accepted:
                continue
            tx.require_absent(graph.root.id)
        cells.extend(graph.cells())
        planned.add(graph.root.id)
        rows.append(index_row(target, wire, now, graph.root.id))
    if cells:
        stage_graph(target.store, tx, PlannedGraph(target.space, cells[-1], tuple(cells[:-1])), target.labels)
    return rows


def _stage_whole_index(target: FabricTarget, tx: Transaction, rows: list[dict[str, Any]], now: str) -> IndexCache:
    """Read and validate the stored index, and stage it with `rows` appended."""
    merged = read_index_rows(target)
    for row in rows:
        merged = with_row(merged, row)
    graph = _plan_index(target, merged, now)
    stage_graph(target.store, tx, graph, target.labels)
    return IndexCache.of(merged, list(graph.root.value["receipts"]))


def _stage_rows(
    target: FabricTarget, tx: Transaction, cache: IndexCache, rows: list[dict[str, Any]], now: str
) -> IndexCache | None:
    """Stage `rows` and the root from the cache; None when two rows (kept or new) share a
    command id (their cells' identities then depend on each other: plan it whole)."""
    fresh = {row_identity(row): row for row in rows}  # a command written twice: its last
    planned = _plan_index(target, list(fresh.values()), now)
    new_links = list(planned.root.value["receipts"])
    kept = cache.copy()  # a new one: the commit may fail
    for row, link in zip(fresh.values(), new_links, strict=True):
        kept.append(row, link)
    if kept.shared_command():  # counted before the oldest rows leave, as the whole plan does
        return None
    kept.keep_last(MAX_ROWS)
    stage_graph(target.store, tx, PlannedGraph(planned.space, planned.children[-1], tuple(planned.children[:-1])),
                target.labels)
    root = {**planned.root.value, "receipts": list(kept.links.values())}
    tx.write(planned.root.id, root, text=_root_text(root, kept.texts.values()))  # keeps the root's labels
    return kept


_EMPTY_TAIL = '"receipts":[]}'


def _root_text(root: dict[str, Any], texts: Iterable[str]) -> str:
    """`values.dumps(root)`, its receipts array joined from each link's own text (the
    200 links are not encoded again on every commit)."""
    head = values.dumps({**root, "receipts": []})
    if not head.endswith(_EMPTY_TAIL):  # receipts is not the last field: encode it all
        return values.dumps(root)
    return head[: -len("]}")] + ",".join(texts) + "]}"


def _plan_index(target: FabricTarget, rows: list[dict[str, Any]], now: str) -> PlannedGraph:
    value = {
        "schema": COMMAND_RECEIPTS_SCHEMA,
        "updatedAt": now,
        "receipts": rows,
    }
    return plan_graph(
        receipts_cause(target.space, target.owner),
        value,
        scope(target.space, target.owner, RECEIPT_INDEX_ARRAY_SCOPE),
    )

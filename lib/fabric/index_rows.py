"""An index commit's rows linked: as they are, as written early, or written now, a group
at a time (index_store.commit_indexes; issue 14 goal 4).

Each row of the new values is linked by the roots. A row equal to its prior row links
its stored cell; a row early_rows.py wrote while the publication ran links that cell
(when `EarlyRows.take` allows it); any other row's cells are written now, ROW_BATCH rows
a transaction (a changed row's, which the current roots link, held until the final
transaction: held_cells.py). The rows are read from the values one at a time, not listed:
a first sync's 25,000 rows were a list of the rows pending, a set of their keys and a
`Link` and a dict entry each until the roots were planned, about 5 MB at its commit's
peak. `IndexLinks` keeps the links: a row of the values' own table (a first sync's
touches, publication_resolve.py) as its cell ID's 43 bytes at its place, any other in a
dict by key.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from lib.fabric.graph_plan import PlannedCell, plan_graph
from lib.fabric.packed_previews import unpacked_row
from lib.fabric.prior_rows import linked_as_is
from lib.fabric.prior_table import PriorRows
from lib.fabric.root_links import ID_BODY, ID_PREFIX, id_body
from lib.fabric.row_cells import direct_rows
from lib.fabric.row_list import unlinked_rows
from lib.fabric.session_graph import GraphTarget
from lib.fabric.values import Link


class IndexLinks(Mapping[str, Link]):
    """The link to each row's cell by the row's key; a row of `table` (at no path, into
    `space`) held as its cell ID at the row's place."""

    def __init__(self, table: PriorRows | None, space: str) -> None:
        self._table, self._space = table, space
        self._ids = bytearray(ID_BODY * len(table)) if table is not None else bytearray()  # zeros: none
        self._count = 0
        self._others: dict[str, Link] = {}

    def __setitem__(self, key: str, link: Link) -> None:
        at = self._table.position(key) if self._ids else None  # type: ignore[union-attr]
        body = id_body(link.id) if at is not None and link.space == self._space and not link.path else None
        if body is None:
            self._others[key] = link
            return
        start = ID_BODY * at  # type: ignore[operator]
        self._count += not self._ids[start]
        self._ids[start : start + ID_BODY] = body
        self._others.pop(key, None)

    def __getitem__(self, key: str) -> Link:
        link = self._others.get(key)
        if link is not None:
            return link
        at = self._table.position(key) if self._count else None  # type: ignore[union-attr]
        start = ID_BODY * at if at is not None else -1
        if start < 0 or not self._ids[start]:
            raise KeyError(key)
        return Link.trusted(ID_PREFIX + self._ids[start : start + ID_BODY].decode("ascii"), self._space)

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        table = self._table
        placed = (table.key(at) for at in range(len(table)) if self._ids[ID_BODY * at]) if self._count else ()  # type: ignore[union-attr]
        yield from placed
        yield from self._others

    def __len__(self) -> int:
        return self._count + len(self._others)


class RowLinker:
    """Links the rows of one commit's values (the caller holds the publish lock)."""

    def __init__(self, target: GraphTarget, prior: Any, early_rows: Any, array_scope: Any, cause: Any,
                 values_table: PriorRows | None) -> None:
        self._target, self._prior, self._early = target, prior, early_rows
        self._scope, self._cause = array_scope, cause
        self.links = IndexLinks(values_table, target.space)
        self.final: Any = None  # held_cells.HeldCells: a changed row's cells, for the final transaction
        self.written = 0  # cells written (or written early and linked)
        self._linked: set[str] | None = None

    @property
    def linked(self) -> set[str]:
        """The row cells the current roots link, made when first needed (a listing idle
        sync links every row as it is: 25,000 IDs were a 2 MB set)."""
        if self._linked is None:
            self._linked = {link.id for link in self._prior.row_links.values()}
        return self._linked

    def link(self, complete: Any, recent: Any, table: PriorRows | None) -> None:
        """Link every row of `complete`'s and `recent`'s sessions (a row of the prior
        `table` linked as it is from its place there is left to the roots)."""
        for group in _groups(self._unlinked(unlinked_rows(complete, table))):
            self._write(group)
        if self._early:
            self._early.taken_all()
        only_recent = (row for row in unlinked_rows(recent, table) if row["key"] not in self.links)
        for group in _groups(only_recent):
            self._write(group)

    def _unlinked(self, rows: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
        """The rows of `rows` neither equal to their prior row nor written early; the
        others' links noted."""
        prior, early = self._prior, self._early
        for row in rows:
            link = linked_as_is(prior.rows, prior.row_links, row)
            if link is None and early:
                taken = early.take(row, self.linked)
                if taken is not None:
                    link = taken[0]
                    self.written += taken[1]
            if link is None:
                yield row
            else:
                self.links[row["key"]] = link

    def _write(self, group: list[Mapping[str, Any]]) -> None:
        """A group's cells: rows of the usual shape assembled as texts (row_cells.py), the
        rest planned; a changed row's held for the final transaction, a new row's written
        now in a transaction of the group's own (nothing links them before the roots)."""
        target, links, linked = self._target, self.links, self.linked
        direct, rest = direct_rows(group, self._scope, frozenset())
        for row in direct:
            links[row.key] = row.link
            if row.link.id in linked:
                self._held().add_row(row)
        direct = [row for row in direct if row.link.id not in linked]
        early: list[PlannedCell] = []
        if rest:
            batch = [unpacked_row(r) for r in rest]
            planned = plan_graph(self._cause, {"sessions": batch}, self._scope)
            row_links = planned.root.value["sessions"]
            for row, link in zip(batch, row_links, strict=True):
                links[row["key"]] = link
            for row_cell, cells_of_row in _by_row(planned.children, {link.id for link in row_links}):
                if row_cell in linked:
                    self._held().add_planned(cells_of_row)
                else:
                    early.extend(cells_of_row)
            del planned, batch
        if early or direct:
            with target.store.transaction(target.space, target.writer) as tx:
                tx.expect_new_cells()  # rows no root links: new to the index, as a rule
                for child in early:
                    tx.write(child.id, child.value, target.labels)
                for row in direct:
                    for cell, text in zip(row.ids, row.texts, strict=True):
                        tx.write(cell, None, target.labels, text=text)
                    self.written += len(row.ids)
                tx.commit()
            self.written += len(early)

    def _held(self) -> Any:
        if self.final is None:
            from lib.fabric.held_cells import HeldCells  # imported by a commit that changes rows

            self.final = HeldCells()
        return self.final


def _groups(rows: Iterable[Mapping[str, Any]]) -> Iterator[list[Mapping[str, Any]]]:
    from lib.fabric.index_store import row_groups  # index_store imports this module

    return row_groups(rows)


def _by_row(children: list[PlannedCell], row_ids: set[str]) -> Iterator[tuple[str, list[PlannedCell]]]:
    """(row cell ID, the row's cells) in plan order: the planner puts a row's preview
    cells right before the row cell itself."""
    group: list[PlannedCell] = []
    for child in children:
        group.append(child)
        if child.id in row_ids:
            yield child.id, group
            group = []
    assert not group, "every planned cell belongs to a row"

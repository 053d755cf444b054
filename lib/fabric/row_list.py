"""An index value's rows in order, the prior table's own held as their places (issue 14 goal 4).

A listing idle sync's index values are the prior table's rows, each as it is
(resolved_rows.py); a first sync's are its touches' table's (publication_resolve.py). A
list of them made a `TableRow` (88 B), its key's string and its place's int a row, and
ordering them a sort key a row: about 6 MB at 25,000 rows at the commit's peak
(docs/store-size-and-speed.md, "Session 29: a listing idle sync flat").
A `RowList` keeps a row of the prior table as its place there (8 bytes in one array)
and any other row as itself; a row is made when the list is iterated, one at a time.
The commit reads a table row's cell from its place without making the row
(`table_cells`), and keeps the list as the committed prior's rows (committed_prior.py).

`ordered_rows` puts the resolved rows in `row_order` without an object a table row: the
prior table is the prior index's rows in that order already (index_values wrote it), and
a row kept as it is keeps its time, so the table's kept rows are in order among
themselves (checked: a store in another order is sorted as before), and the other rows
(sorted as before) are merged into them.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from lib.fabric.prior_table import PriorRows, TableRow
from lib.fabric.session_index import in_row_order, order_seconds, row_micros

if TYPE_CHECKING:
    from lib.fabric.resolved_rows import ResolvedRows


class RowList:
    """Rows in order: `places[i]` >= 0 is the table's row there, -1 - n the n-th of `others`."""

    __slots__ = ("table", "places", "others")

    def __init__(self, rows: list[Mapping[str, Any]] | None = None, *, table: PriorRows | None = None,
                 places: array | None = None, others: list[Mapping[str, Any]] | None = None) -> None:
        if rows is not None:  # a list of rows: its table's rows as their places
            table = next((r._file for r in rows if type(r) is TableRow), None)  # type: ignore[union-attr]
            if table is None:
                places, others = None, rows
            else:
                others = [r for r in rows if not table.owns(r)]
                places, n = array("q", [0]) * len(rows), 0
                for at, r in enumerate(rows):
                    if table.owns(r):
                        places[at] = r._at  # type: ignore[attr-defined]
                    else:
                        places[at], n = -1 - n, n + 1
        self.table = table
        self.places = places  # None: no table row: `others` in order
        self.others = others if others is not None else []

    @staticmethod
    def of(rows: Any) -> RowList:
        """`rows` (a RowList or a list of rows) as a RowList."""
        return rows if type(rows) is RowList else RowList(list(rows))

    def __len__(self) -> int:
        return len(self.others) if self.places is None else len(self.places)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        if self.places is None:
            return iter(self.others)
        return map(self.at, range(len(self.places)))

    def at(self, i: int) -> Mapping[str, Any]:
        """Row `i` (a table's row made now)."""
        if self.places is None:
            return self.others[i]
        place = self.places[i]
        return self.table.row(place) if place >= 0 else self.others[-1 - place]  # type: ignore[union-attr]

    def status(self, i: int) -> Any:
        """Row `i`'s status (None when it has none), a table's row not made."""
        place = self.places[i] if self.places is not None else -1 - i
        return self.table.status(place) if place >= 0 else self.others[-1 - place].get("status")  # type: ignore[union-attr]

    def chosen(self, picked: list[int]) -> RowList:
        """Rows `picked` (in that order) as a RowList of their own."""
        if self.places is None:
            return RowList(others=[self.others[i] for i in picked])
        places, others = array("q", [0]) * len(picked), []
        for n, i in enumerate(picked):
            place = self.places[i]
            if place < 0:
                others.append(self.others[-1 - place])
                place = -len(others)
            places[n] = place
        return RowList(table=self.table, places=places, others=others)


def table_cells(rows: Any, table: PriorRows | None) -> Iterator[tuple[str | None, Mapping[str, Any] | None]]:
    """Each row's (cell ID, None) when it is a row of `table` whose cell is a link into the
    space (it is linked as it is), else (None, the row); a table's
    row held as its place is made only when it has no such cell."""
    if type(rows) is RowList and rows.places is not None and rows.table is table and table is not None:
        others = rows.others
        for place in rows.places:
            if place < 0:
                yield None, others[-1 - place]
                continue
            cell = table.cell(place)
            yield (cell, None) if cell is not None else (None, table.row(place))
        return
    for row in rows:
        cell = table.cell(row._at) if table is not None and table.owns(row) else None
        yield (cell, None) if cell is not None else (None, row)


def unlinked_rows(rows: Any, table: PriorRows | None) -> Iterator[Mapping[str, Any]]:
    """The rows that are not `table`'s with a cell (what `table_cells` gives a row for)."""
    return (row for cell, row in table_cells(rows, table) if cell is None)  # type: ignore[misc]


def ordered_rows(rows: ResolvedRows, times: Mapping[str, tuple[Any, int]]) -> tuple[RowList, array]:
    """`rows` (whose `table` is a PriorRows) in row_order, and each one's row_micros: the
    table's kept rows by their places (in the table's order when it is row_order, checked),
    merged with the others sorted by session_index.in_row_order."""
    table = rows.table
    assert table is not None
    places = array("q", rows.kept_places())
    micros = array("q", [0]) * len(places)
    for n, place in enumerate(places):
        micros[n] = row_micros(table.fields(place))
    if not _in_order(table, places, micros):  # a store written in another order, a first sync's touches
        order = _row_order(table, places, micros)
        places, micros = array("q", map(places.__getitem__, order)), array("q", map(micros.__getitem__, order))
    others, other_micros = in_row_order(list(rows.others.values()), times)
    if not others:
        return RowList(table=table, places=places, others=[]), micros
    merged, merged_micros = array("q"), array("q")
    i = j = 0
    while i < len(places) or j < len(others):
        if j == len(others) or (i < len(places) and _before(table, places[i], micros[i], others[j], other_micros[j])):
            merged.append(places[i])
            merged_micros.append(micros[i])
            i += 1
        else:
            merged.append(-1 - j)
            merged_micros.append(other_micros[j])
            j += 1
    return RowList(table=table, places=merged, others=others), merged_micros


def _row_order(table: PriorRows, places: array, micros: array) -> list[int]:
    """The indices of `places` in row_order: newest first (a stable sort keeps equal times
    as they are), then each run of equal times by key, its keys made a run at a time
    (not a key string a row at once: a first sync's 25,000)."""
    order = sorted(range(len(places)), key=lambda n: order_seconds(micros[n]), reverse=True)
    start = 0
    for end in range(1, len(order) + 1):
        if end == len(order) or order_seconds(micros[order[end]]) != order_seconds(micros[order[start]]):
            if end - start > 1:
                order[start:end] = sorted(order[start:end], key=lambda n: table.key(places[n]))
            start = end
    return order


def _in_order(table: PriorRows, places: array, micros: array) -> bool:
    """Whether the table's rows at `places` are in row_order (newest first, then by key)."""
    for n in range(1, len(places)):
        before, now = order_seconds(micros[n - 1]), order_seconds(micros[n])
        if before < now or (before == now and table.key(places[n - 1]) >= table.key(places[n])):
            return False
    return True


def _before(table: PriorRows, place: int, moment: int, other: Mapping[str, Any], other_moment: int) -> bool:
    """Whether the table's row at `place` (of row_micros `moment`) comes before `other`."""
    mine, theirs = order_seconds(moment), order_seconds(other_moment)
    return mine > theirs or (mine == theirs and table.key(place) < other["key"])

"""A publication's resolved rows by key: the prior table's rows kept as they are held as
their places there, not as a row object and a dict entry each (issue 14 goal 4).

A listing idle sync resolves each of its 25,000 sessions to the prior table's row itself
(prior_table.py). Held as a dict of `TableRow`s (88 B, its place's int and its key's
string each, and the dict's entry), they were about 6 MB at 25,000 rows at the commit's
peak (docs/store-size-and-speed.md, "Session 29: a listing idle sync flat"). Here such
a row is a byte in one array a prior row; any other row (changed, new, of another
table) is kept in a dict as before. A row is made when read.

`index_values` reads the places without making a row (session_index.py, `row_list.py`),
and the commit links such a row from its place (row_list.table_cells).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from itertools import chain
from typing import Any

from lib.fabric.prior_table import PriorRows


class ResolvedRows(Mapping[str, Mapping[str, Any]]):
    """Rows by key; `table`'s own rows kept as their places (`kept_places`)."""

    __slots__ = ("table", "_kept", "_count", "_others")

    def __init__(self, table: PriorRows | None = None) -> None:
        self.table = table
        self._kept = bytearray(len(table) if table is not None else 0)  # 1: the table's row itself
        self._count = 0
        self._others: dict[str, Mapping[str, Any]] = {}

    def put(self, key: str, row: Mapping[str, Any]) -> None:
        """`row` as `key`'s row."""
        table = self.table
        if table is not None and table.owns(row):
            self.keep(row._at)  # type: ignore[attr-defined]
            if self._others:
                self._others.pop(key, None)
            return
        if self._count and (at := table.position(key)) is not None and self._kept[at]:  # type: ignore[union-attr]
            self._kept[at] = 0
            self._count -= 1
        self._others[key] = row

    def keep(self, at: int) -> None:
        """The table's row `at` as it is (its key's row)."""
        if not self._kept[at]:
            self._kept[at] = 1
            self._count += 1

    def kept_places(self) -> Iterator[int]:
        """The places of the table's rows kept as they are, in the table's order."""
        if self._count:
            yield from (at for at, kept in enumerate(self._kept) if kept)

    @property
    def others(self) -> dict[str, Mapping[str, Any]]:
        """The rows that are not the table's own, by key."""
        return self._others

    def __getitem__(self, key: str) -> Mapping[str, Any]:
        row = self._others.get(key)
        if row is not None:
            return row
        at = self.table.position(key) if self._count else None  # type: ignore[union-attr]
        if at is None or not self._kept[at]:
            raise KeyError(key)
        return self.table.row(at, key)  # type: ignore[union-attr]

    def __contains__(self, key: object) -> bool:
        if key in self._others:
            return True
        at = self.table.position(key) if self._count else None  # type: ignore[union-attr]
        return at is not None and self._kept[at] != 0

    def __iter__(self) -> Iterator[str]:
        return chain(map(self.table.key, self.kept_places()) if self._count else (), self._others)  # type: ignore[union-attr]

    def __len__(self) -> int:
        return self._count + len(self._others)

    def values(self) -> ValuesView[Mapping[str, Any]]:
        return _Values(self)

    def items(self) -> ItemsView[str, Mapping[str, Any]]:
        return _Items(self)

    def statuses(self) -> Iterator[tuple[str | None, Any]]:
        """Each row's (status, gitWorktreeRoot), a kept row's without making it."""
        table = self.table
        for at in self.kept_places():
            yield table.status(at), table.worktree(at)  # type: ignore[union-attr]
        for row in self._others.values():
            yield row.get("status"), row.get("gitWorktreeRoot")


class _Values(ValuesView[Mapping[str, Any]]):
    _mapping: ResolvedRows

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        rows = self._mapping
        made = map(rows.table.row, rows.kept_places()) if rows.table is not None else ()
        return chain(made, rows.others.values())


class _Items(ItemsView[str, Mapping[str, Any]]):
    _mapping: ResolvedRows

    def __iter__(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        rows = self._mapping
        if rows.table is not None:
            for at in rows.kept_places():
                row = rows.table.row(at)
                yield row.key, row
        yield from rows.others.items()

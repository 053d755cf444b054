"""The prior table's cell IDs as a column in a private temporary file (lib/fabric/cell_column.py,
session 30): each row's body by its place, set and read back across the file's blocks
and the block in memory, the file private and unlinked."""

from __future__ import annotations

import os
import random
import stat

from lib.fabric import cell_column
from lib.fabric.cell_column import CellColumn
from lib.fabric.prior_table import PriorRows
from lib.fabric.values import Link

NONE = b"\x00" * 43


def _body(n: int) -> bytes:
    return f"{n:043d}".encode("ascii")


def test_bodies_set_and_read_back_by_place_in_any_order() -> None:
    column = CellColumn()
    count = 3 * cell_column.PER_BLOCK + 7
    for n in range(count):
        column.append(NONE)
        if n % 3:
            column.set(n, _body(n))  # the table sets each row's body once it is appended
    column.set(5, _body(500))  # a row in a block already in the file, set again
    assert len(column) == count and column._filed == 3 * cell_column.PER_BLOCK
    fd = column._file.fileno()
    assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o600 and os.fstat(fd).st_nlink == 0
    expected = [_body(500) if n == 5 else _body(n) if n % 3 else NONE for n in range(count)]
    assert [column.get(n) for n in range(count)] == expected  # in order: a read a block
    places = list(range(count))
    random.Random(3).shuffle(places)
    assert [column.get(n) for n in places] == [expected[n] for n in places]


def test_a_prior_table_keeps_its_cells_out_of_memory_and_gives_them_as_before() -> None:
    space = "did:key:z6MkSpace"
    table = PriorRows(None, space)
    count = 2 * cell_column.PER_BLOCK + 11
    for n in range(count):
        link = Link("of:fid1:" + _body(n).decode(), space) if n % 4 else Link("of:other", space)
        table.add({"key": f"codex/{n}", "status": "complete"}, link, False)
    assert table._cells._filed == 2 * cell_column.PER_BLOCK and len(table._cells._tail) == 11 * 43
    for n in range(count):
        assert table.cell(n) == ("of:fid1:" + _body(n).decode() if n % 4 else "of:other")
        assert table.link(n) == Link(table.cell(n), space)

"""The prior table's cell IDs, a fixed-width column kept in a private temporary file
(issue 14 goal 4, session 30).

A prior row whose cell is a short link into the space keeps its cell ID's 43-byte body
(prior_table.PriorRows.cell): at 25,000 rows 1.08 MB, held from the prior's read to the
end of the sync, the largest of the table's parts after the keys. Here the bodies are
appended to an unlinked private file (0600) a block at a time, the last block in memory,
and read back a block (95 bodies, 4 KB) at a time, the last block read kept: the commit
reads them in the table's order (its roots link every row as it is), so one read serves
95 rows; a row looked up alone costs one small read.
"""

from __future__ import annotations

import os
import tempfile
from typing import IO

from lib.fabric.root_links import ID_BODY

PER_BLOCK = 95  # bodies a block (4,085 bytes)
_BLOCK = ID_BODY * PER_BLOCK


class CellColumn:
    """ID_BODY bytes a row, by the row's place; zeros where a row has none."""

    __slots__ = ("_file", "_filed", "_tail", "_read")

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._filed = 0  # bodies in the file: whole blocks
        self._tail = bytearray()  # the bodies after them
        self._read: tuple[int, bytes] = (-1, b"")  # the block read last: (its number, its bytes)

    def __len__(self) -> int:
        return self._filed + len(self._tail) // ID_BODY

    def append(self, body: bytes) -> None:
        self._tail += body
        if len(self._tail) >= _BLOCK:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="agentctl-cells-", buffering=0)
            os.pwrite(self._file.fileno(), self._tail[:_BLOCK], ID_BODY * self._filed)
            del self._tail[:_BLOCK]
            self._filed += PER_BLOCK

    def set(self, at: int, body: bytes) -> None:
        """Row `at`'s body (a row of the last block, as a table filled in order sets it)."""
        if at >= self._filed:
            start = ID_BODY * (at - self._filed)
            self._tail[start : start + ID_BODY] = body
            return
        os.pwrite(self._file.fileno(), body, ID_BODY * at)  # type: ignore[union-attr]
        if self._read[0] == at // PER_BLOCK:
            self._read = (-1, b"")

    def get(self, at: int) -> bytes:
        if at >= self._filed:
            start = ID_BODY * (at - self._filed)
            return bytes(self._tail[start : start + ID_BODY])
        number, block = self._read
        if number != at // PER_BLOCK:
            number = at // PER_BLOCK
            block = os.pread(self._file.fileno(), _BLOCK, _BLOCK * number)  # type: ignore[union-attr]
            self._read = (number, block)
        start = ID_BODY * (at - PER_BLOCK * number)
        return block[start : start + ID_BODY]

"""Small records held until a later step, kept in an unlinked private temporary file
instead of memory, and read back in the order they were added (issue 14 goal 4).

A sync holds something per session until its one index commit (the `published`
records wait for it: publish_stage.py; so do the cells of the rows written early:
early_rows.py). Held as Python objects, 25,000 sessions kept
25,000 small objects alive that pinned the allocator's arenas; appended here they cost
a few bytes of buffer. Records are marshal-able values (tuples of str, int, None);
the file (0600, gone when closed or when the process ends) is made on the first add.
"""

from __future__ import annotations

import marshal
import os
import struct
import tempfile
from collections.abc import Iterator
from typing import IO, Any

_BUFFER = 64 * 1024  # bytes a write or a read moves at a time
_LENGTH = struct.Struct("<I")  # each record: its length, then its marshal bytes


class RecordSpill:
    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._end = 0
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, record: Any) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="agentctl-records-", buffering=_BUFFER)
        data = marshal.dumps(record)
        self._file.write(_LENGTH.pack(len(data)) + data)
        self._end += _LENGTH.size + len(data)
        self._count += 1

    def __iter__(self) -> Iterator[Any]:
        """Every record in the order added (read by offset: adding more meanwhile is safe)."""
        if self._file is None:
            return
        self._file.flush()
        fd, end, size = self._file.fileno(), self._end, _LENGTH.size
        at, buffer, pos = 0, b"", 0
        for _ in range(self._count):
            while len(buffer) - pos < size or len(buffer) - pos < size + _LENGTH.unpack_from(buffer, pos)[0]:
                chunk = os.pread(fd, _BUFFER, at) if at < end else b""
                if not chunk:
                    raise EOFError("the record spill ended inside a record")
                at += len(chunk)
                buffer, pos = buffer[pos:] + chunk, 0
            (length,) = _LENGTH.unpack_from(buffer, pos)
            yield marshal.loads(buffer[pos + size : pos + size + length])
            pos += size + length

    def clear(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._end = self._count = 0

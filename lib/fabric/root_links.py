"""An index root's links to its rows' cells, held as the cells' IDs in one buffer, not a
`Link` object (and its ID string) a row (issue 14 goal 4).

At 25,000 rows the two roots' lists of links held about 4 MB through the index commit's
final transaction (a Link of 56 bytes and an ID string of 100 a row, and again in the
roots this process kept after the commit). A link into the root's own space at no path
to an `of:fid1:` cell, what commit_indexes writes for every row, is kept here as the 43
bytes of its ID after that prefix; a link of any other form is kept as it is. A Link is
made only when one is read (`__getitem__`, iteration); the root's text and its stored
form are written from the buffer (index_root_text.py).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO, Any

from lib.fabric.values import Link
from lib.hashing import value_hash

ID_PREFIX = "of:fid1:"
ID_BODY = 43
_NO_BODY = b"\x00" * ID_BODY
SPILL_BYTES = 64 * 1024  # bodies held in memory at most (about 1,500 links)


def id_body(cell_id: str) -> bytes | None:
    """A cell ID's ID_BODY bytes after ID_PREFIX (what a link is held as), or None when
    it has another form."""
    body = cell_id[len(ID_PREFIX):]
    if cell_id.startswith(ID_PREFIX) and len(body) == ID_BODY and body.isascii():
        return body.encode("ascii")
    return None


class RootLinks(Sequence[Link]):
    """The `sessions` of an index root as built (`add`, `add_id`), then read-only."""

    __slots__ = ("space", "_bodies", "_spilled", "_spilled_bytes", "_other", "_count")

    def __init__(self, space: str) -> None:
        self.space = space
        # ID_BODY bytes a link (_NO_BODY for one in `_other`): the first `_spilled_bytes` in
        # `_spilled`, an unlinked private temporary file (0600), the rest here (issue 14
        # goal 4: the complete root's 25,000 links, 1.08 MB, were held through the index
        # commit's final transaction and to the end of a one-shot sync; its stored form
        # and digest read them a run at a time, `runs`, and only a prior this process
        # publishes on again reads them back whole, `bodies`)
        self._bodies = bytearray()
        self._spilled: IO[bytes] | None = None
        self._spilled_bytes = 0
        self._other: dict[int, Link] = {}
        self._count = 0

    @property
    def bodies(self) -> bytearray:
        """Every link's ID_BODY bytes in memory (those in the file read back, once)."""
        spilled = self._spilled
        if spilled is not None:
            whole = bytearray(self._spilled_bytes)
            os.preadv(spilled.fileno(), [whole], 0)
            whole += self._bodies
            self._bodies, self._spilled, self._spilled_bytes = whole, None, 0
            spilled.close()
        return self._bodies

    def runs(self) -> Iterator[bytes]:
        """Every link's ID_BODY bytes, a run of whole links (about SPILL_BYTES) at a time."""
        if self._spilled is not None:
            step = ID_BODY * max(SPILL_BYTES // ID_BODY, 1)
            for start in range(0, self._spilled_bytes, step):
                yield os.pread(self._spilled.fileno(), min(step, self._spilled_bytes - start), start)
        if self._bodies:
            yield bytes(self._bodies)

    def _held(self) -> None:
        """A body added: the bodies go to the file once they are SPILL_BYTES."""
        if len(self._bodies) >= SPILL_BYTES:
            if self._spilled is None:
                self._spilled = tempfile.TemporaryFile(prefix="agentctl-links-", buffering=0)
            self._spilled.write(self._bodies)
            self._spilled_bytes += len(self._bodies)
            self._bodies = bytearray()

    def add_id(self, cell_id: str) -> None:
        """A link into this space at no path to `cell_id`."""
        body = id_body(cell_id)
        if body is not None:
            self._bodies += body
            self._count += 1
            self._held()
        else:
            self._add_other(Link.trusted(cell_id, self.space))

    def add(self, link: Link) -> None:
        if type(link) is Link and link.space == self.space and not link.path:
            self.add_id(link.id)
        else:
            self._add_other(link)

    def _add_other(self, link: Link) -> None:
        self._bodies += _NO_BODY
        self._other[self._count] = link
        self._count += 1
        self._held()

    @property
    def all_short(self) -> bool:
        """Whether every link is held as its ID's body (none of another form)."""
        return not self._other

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return [self[i] for i in range(*at.indices(self._count))]
        if at < 0:
            at += self._count
        if not 0 <= at < self._count:
            raise IndexError(at)
        other = self._other.get(at)
        if other is not None:
            return other
        return Link.trusted(self.cell_id(at), self.space)

    def cell_id(self, at: int) -> str:
        """The ID of the cell link `at` is to (one held as its body)."""
        return ID_PREFIX + self.bodies[ID_BODY * at : ID_BODY * (at + 1)].decode("ascii")

    def __iter__(self) -> Iterator[Link]:
        return map(self.__getitem__, range(self._count))

    def items(self) -> Iterator[str | Link]:
        """Each link's cell ID when it is held as its body, else the link itself."""
        other = self._other
        for at in range(self._count):
            yield other.get(at) or self.cell_id(at)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RootLinks):
            return self.space == other.space and self.bodies == other.bodies and self._other == other._other
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == self._count and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def digest(self) -> bytes:
        """A digest of these links (equal links, equal digests): the bodies and the others."""
        h = hashlib.sha256(self.space.encode("utf-8", "surrogatepass"))
        for run in self.runs():
            h.update(run)
        if self._other:
            h.update(value_hash([[at, link] for at, link in sorted(self._other.items())]))
        return h.digest()

    def __repr__(self) -> str:
        return f"RootLinks({self._count} links into {self.space})"

"""An index root written in the commit's final transaction (index_store.commit_indexes).

A root's `sessions` are held as their cells' IDs (root_links.RootLinks). When the store
keeps a stored form of its own (the SQLite store: links into the space shortened, the
text compressed), that form is made from the IDs and the root's other fields directly
(`Store.stored_form_of_links`), and the root's long text (about 150 bytes a row: 3.7 MB
at 25,000 rows, then its shortened copy, its UTF-8 bytes and the compressed form at
once: the listing idle sync's peak, issue 14 goal 4) is never made. Any other root, or
store, is written from its text (row_cells.root_text), as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lib.fabric import values
from lib.fabric.graph_plan import PlannedCell
from lib.fabric.root_links import ID_BODY, ID_PREFIX, RootLinks
from lib.fabric.row_cells import ROWS, root_parts, root_text
from lib.fabric.values import Link

if TYPE_CHECKING:
    from lib.fabric.store import Transaction


def write_root(tx: Transaction, store: Any, root: PlannedCell, labels: Any) -> None:
    """Write `root` (a planned index root) in `tx`, in the store's stored form when the
    store makes one from its links' IDs, else as its text."""
    space, value = tx.space, root.value
    links = value.get(ROWS)
    if type(links) is RootLinks and links.all_short and links.space == space:
        parts = root_parts(value)
        if parts is not None:
            head, tail = parts
            stored = store.stored_form_of_links(space, head, links.bodies, tail)
            if stored is not None:
                tx.write_stored(root.id, stored, labels, _text_length(head, tail, len(links), space))
                return
    tx.write(root.id, value, labels, text=root_text(value, space))


def _text_length(head: str, tail: str, count: int, space: str) -> int:
    """The characters of the text head + `count` comma-joined links into `space` + tail."""
    link = len(values.dumps(Link.trusted(ID_PREFIX + "A" * ID_BODY, space)))
    return len(head) + count * link + max(count - 1, 0) + len(tail)

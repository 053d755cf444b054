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


def stored_root(store: Any, space: str, root: PlannedCell) -> tuple[str | bytes, int] | None:
    """(`root`'s stored form in `store`, its text's length) made from its links' IDs
    when the store makes one so (`Store.stored_form_of_links`), else None."""
    value = root.value
    links = value.get(ROWS)
    if type(links) is not RootLinks or not links.all_short or links.space != space:
        return None
    parts = root_parts(value)
    if parts is None:
        return None
    head, tail = parts
    stored = store.stored_form_of_links(space, head, links.runs(), tail, len(links))  # a run at a time
    return None if stored is None else (stored, _text_length(head, tail, len(links), space))


def write_root(tx: Transaction, root: PlannedCell, labels: Any, stored: tuple[str | bytes, int] | None) -> None:
    """Write `root` (a planned index root) in `tx`: its `stored_root` when there is one,
    else its text."""
    if stored is not None:
        tx.write_stored(root.id, stored[0], labels, stored[1])
    else:
        tx.write(root.id, root.value, labels, text=root_text(root.value, tx.space))


def _text_length(head: str, tail: str, count: int, space: str) -> int:
    """The characters of the text head + `count` comma-joined links into `space` + tail."""
    link = len(values.dumps(Link.trusted(ID_PREFIX + "A" * ID_BODY, space)))
    return len(head) + count * link + max(count - 1, 0) + len(tail)

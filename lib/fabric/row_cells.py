"""An index row's cells assembled directly, without the general planner (issue 14 goal 1).

A publication's rows have one shape: scalar fields, a `capabilities` object, the
`manifest` link and up to twelve message previews, each a flat object with an `id`.
What `plan_graph` makes of such a row is fixed (spec "Stable array cells"): a cell per
preview, named by the preview's own identity inside the row's cause, and the row cell,
named by the row's `key`, its previews replaced by links to those cells. So it is
assembled here instead of planned:

- when a row is observed, `preview_cells.preview_cells` keeps each preview's identity
  encoding and fvj1 text (packed_previews.PreviewCells), what the planner and the store
  would compute from it at the commit after decoding the previews again;
- at the commit, `direct_rows` names the cells from those encodings (one C call for a
  batch of rows) and writes the row cell's text from the row's fields.

A prior row whose previews are its stored ones (`StoredPreviews`: a row whose status
alone changed, as every row of a sync that marks its sessions stale) is its row cell
alone, linking the preview cells it links now (its row cells read once a batch).

A row outside that shape (an array in a preview, a non-empty array among its other
fields, a preview with no identity of its own, two previews of one identity) is left to
`plan_graph`, and so is a row whose cell is in `linked` (early_rows.py passes the row
cells the current roots link; the commit passes none: it holds a changed row's cells
for its final transaction, held_cells.py). tests/fabric/test_row_cells.py and
test_index_changed_rows.py hold the two equal, IDs and texts.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping, Sequence, Set
from typing import Any

import orjson

from lib.fabric import value_decoding, values
from lib.fabric.cell_id import PREFIX as CELL_ID_PREFIX
from lib.fabric.cell_speedups import CELLS
from lib.fabric.packed_previews import FIELD as PREVIEWS
from lib.fabric.packed_previews import PreviewCells, StoredPreviews
from lib.fabric.packed_rows import PackedRow
from lib.fabric.preview_cells import LEAF_TYPES as _LEAF_TYPES
from lib.fabric.root_links import RootLinks
from lib.fabric.stored_values import SameSpaceLinks
from lib.fabric.values import Link
from lib.hashing import encode_value

ROWS = "sessions"

# The fixed parts of an array-element cause's encoding (graph_plan.py builds the same,
# keys in order: agentConnector, identity, path, scope), and of `{"causal": cause}`.
_CAUSE_HEAD = b"\x11" + encode_value("agentConnector") + encode_value("array-element") + encode_value("identity")
_PATH_KEY = encode_value("path")
_SCOPE_KEY = encode_value("scope")
_CAUSAL_HEAD = b"\x11" + encode_value("causal")
_ROWS_PATH = encode_value([ROWS])
_PREVIEWS_PATH = encode_value([PREVIEWS])


class DirectRow:
    """A row's cells: their IDs and fvj1 texts (two lists, no pair per cell), its
    previews' first and the row cell last."""

    __slots__ = ("key", "link", "ids", "texts")

    def __init__(self, key: str, link: Link, ids: list[str], texts: list[str]) -> None:
        self.key, self.link, self.ids, self.texts = key, link, ids, texts

    @property
    def cells(self) -> list[tuple[str, str]]:
        return list(zip(self.ids, self.texts, strict=True))


def direct_rows(
    rows: Sequence[Mapping[str, Any]], base_scope: Mapping[str, Any], linked: Set[str]
) -> tuple[list[DirectRow], list[Mapping[str, Any]]]:
    """(`rows` assembled here, the rest for `plan_graph`), each in `rows`' order.

    `rows` are the elements of an index value's `sessions` (keys distinct), `base_scope`
    that array's scope and `linked` the row cells the current index roots link."""
    space = base_scope["spaceDid"]
    tail = _PATH_KEY + _ROWS_PATH + _SCOPE_KEY + encode_value(dict(base_scope)) + b"\x00"
    keyed: list[tuple[Mapping[str, Any], bytes]] = []
    rest: list[Mapping[str, Any]] = []
    for row in rows:
        key = row["key"]
        if type(key) is str and key:  # rule 1's first field: {"field": "key", "value": key}
            keyed.append((row, _CAUSE_HEAD + encode_value({"field": "key", "value": key}) + tail))
        else:
            rest.append(row)
    row_ids = _cause_ids([cause for _, cause in keyed])
    chosen: list[tuple[Mapping[str, Any], str, dict[str, Any], list[str] | None]] = []
    preview_causes: list[bytes] = []
    stored = _stored_preview_links([row.get(PREVIEWS) for row, _ in keyed], space)
    for (row, cause), row_id in zip(keyed, row_ids, strict=True):
        previews = row.get(PREVIEWS)
        if type(previews) is StoredPreviews and row_id not in linked:
            # the prior row's own previews (a row whose status alone changed: every row of
            # a sync that marks its sessions stale): its cell links their stored cells
            links = stored.get(row_id) if previews.cell == row_id else None
            fields = _fields(row) if links is not None else None
            if fields is None:
                rest.append(row)
            else:
                fields[PREVIEWS] = links
                chosen.append((row, row_id, fields, None))
            continue
        cells = previews.cells() if type(previews) is PreviewCells and row_id not in linked else None
        fields = _fields(row) if cells is not None else None
        if cells is None or fields is None:
            rest.append(row)
            continue
        encodings, texts = cells
        preview_tail = _PATH_KEY + _PREVIEWS_PATH + _SCOPE_KEY + cause + b"\x00"
        preview_causes.extend(_CAUSE_HEAD + encoding + preview_tail for encoding in encodings)
        chosen.append((row, row_id, fields, texts))
    preview_ids = _cause_ids(preview_causes)
    preview_links = _links(preview_ids, space)
    out: list[DirectRow] = []
    at = 0
    for row, row_id, fields, held in chosen:
        if held is None:  # its previews' cells are stored: the row cell alone
            ids, texts = [], []
        else:
            texts = held
            ids = preview_ids[at : at + len(texts)]
            fields[PREVIEWS] = preview_links[at : at + len(texts)]
            at += len(texts)
        ids.append(row_id)
        texts.append(values.dumps(fields))
        out.append(DirectRow(row["key"], Link.trusted(row_id, space), ids, texts))
    if len(rest) < len(rows):  # keep the caller's order among the rest (planned as one batch)
        order = {id(row): i for i, row in enumerate(rows)}
        rest.sort(key=lambda row: order[id(row)])
    return out, rest


def _stored_preview_links(previews: list[Any], space: str) -> dict[str, list[Link]]:
    """Row cell -> the links to its preview cells, as stored, for the rows whose previews
    are a prior row's stored ones (one read of their row cells), when the stored row
    links each preview's cell at no path in `space` (as the planner writes a row)."""
    cells = [p.cell for p in previews if type(p) is StoredPreviews and p.space == space]
    if not cells:
        return {}
    store = next(p.store for p in previews if type(p) is StoredPreviews and p.space == space)
    out: dict[str, list[Link]] = {}
    # the previews kept as their text: stored as short links (as a rule), read as their IDs
    for cell, document in store.iter_many(space, cells, keep_fields=_PREVIEWS_FIELD):
        value = document.value
        links = value.get(PREVIEWS) if type(value) is dict else None
        if type(links) is SameSpaceLinks:
            out[cell] = _links(list(links), space)
        elif type(links) is list:  # kept as fvj1 JSON: the links decoded
            decoded = value_decoding.decode(links)
            if all(type(x) is Link and not x.path and x.space == space for x in decoded):
                out[cell] = decoded
    return out


_PREVIEWS_FIELD = frozenset({PREVIEWS})


def _fields(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The row as a dict to encode (a copy), or None when a field other than the previews
    would make cells of its own (a non-empty array) or is not plain."""
    fields = row.plain() if isinstance(row, PackedRow) else dict(row)
    try:
        for name, value in fields.items():
            if name != PREVIEWS and type(value) not in _LEAF_TYPES and not _cell_free(value):
                return None
    except RecursionError:  # the planner gives that its own error (too-deep)
        return None
    return fields


def _cell_free(value: Any) -> bool:
    """Whether the planner leaves `value` as it is (an empty array becomes an equal one)."""
    t = type(value)
    if t in _LEAF_TYPES or t is Link:
        return True
    if t is dict:
        return all(type(k) is str and _cell_free(v) for k, v in value.items())
    if t is list or t is tuple:
        return not value
    return False


def _cause_ids(encodings: list[bytes]) -> list[str]:
    """The cell ID of each array-element cause encoding (graph_plan's rule)."""
    if CELLS is not None:
        return CELLS.cause_ids(_CAUSAL_HEAD, encodings, b"\x00")
    return [
        CELL_ID_PREFIX
        + base64.urlsafe_b64encode(hashlib.sha256(_CAUSAL_HEAD + e + b"\x00").digest()).rstrip(b"=").decode("ascii")
        for e in encodings
    ]


def _links(ids: list[str], space: str) -> list[Link]:
    if CELLS is not None:
        return CELLS.links(ids, space)
    return [Link.trusted(i, space) for i in ids]


# -- the index roots ------------------------------------------------------------------------


def root_text(value: Mapping[str, Any], space: str) -> str:
    """`values.dumps(value)` of an index root whose `sessions` are links: those are
    written from each link's ID into one text (a template per space) instead of
    encoding a value of N links (four objects each) and then writing it."""
    parts = root_parts(value)
    if parts is None:
        return values.dumps(value)
    head, tail = parts
    # one join of every piece: joining the links, then adding the head and the tail,
    # made the text (3.7 MB at 25,000 rows) three times over, the commit's peak
    pieces = [head]
    _link_pieces(value[ROWS], space, pieces)
    pieces.append(tail)
    return "".join(pieces)


def root_parts(value: Mapping[str, Any]) -> tuple[str, str] | None:
    """(the text before its first row link, the text after its last) of
    `values.dumps(value)` for an index root whose `sessions` are links; None when that
    text is to be written whole (an escaped object, a part orjson refuses)."""
    names = list(value)
    if any(name[:1] == "/" for name in names):  # an escaped object: written whole
        return None
    at = names.index(ROWS)
    before = {name: value[name] for name in names[:at]}
    before[ROWS] = []
    after = {name: value[name] for name in names[at + 1 :]}
    try:  # what values.dumps does, in parts: orjson writes an object field by field
        head = orjson.dumps(values.encode(before)).decode("utf-8")
        tail = orjson.dumps(values.encode(after)).decode("utf-8") if after else "{}"
    except TypeError:  # orjson refused a part: values.dumps writes the whole another way
        return None
    assert head.endswith(_EMPTY_ROWS)
    return head[: -len("]}")], "]" + ("," + tail[1:] if after else "}")


_EMPTY_ROWS = '"' + ROWS + '":[]}'
_PLAIN_ID = re.compile(r"[ !#-\[\]-~]*")  # printable ASCII but `"` and `\`: JSON writes it as it is
_templates: dict[str, tuple[str, str]] = {}


def _link_pieces(links: Sequence[Any], space: str, pieces: list[str]) -> None:
    """The elements of `links`' JSON text, as values.dumps would write them, comma-joined,
    appended to `pieces` in parts (each link's text its ID between two fixed strings)."""
    template = _templates.get(space)
    if template is None:
        marker = "of:" + "0" * 8
        prefix, _, suffix = values.dumps(Link.trusted(marker, space)).partition(marker)  # the ID comes first
        if len(_templates) > 64:
            _templates.clear()
        template = _templates[space] = (prefix, suffix)
    prefix, suffix = template
    plain = _PLAIN_ID.fullmatch
    after_comma = "," + prefix
    if type(links) is RootLinks and links.space == space:  # each held as its cell's ID
        for at, item in enumerate(links.items()):
            if type(item) is str and plain(item):
                pieces += (after_comma if at else prefix, item, suffix)
            else:
                pieces += ("," if at else "", values.dumps(item if type(item) is not str else links[at]))
        return
    for at, link in enumerate(links):  # each link's text after its comma
        if type(link) is Link and not link.path and link.space == space and plain(link.id):
            pieces += (after_comma if at else prefix, link.id, suffix)
        else:
            pieces += ("," if at else "", values.dumps(link))

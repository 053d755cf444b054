"""Reading the prior complete index's rows (index_store.read_prior's part that reads
every row: issue 14 goal 3's listing idle sync reads all of them).

Each row is read with its previews left in its cell (StoredPreviews) whenever they are
links into the index's space, as commit_indexes writes them: the store hands them back
undecoded (`keep_fields`), so no Link is made for any of a row's twelve preview links,
and the SQLite store does not even write them out (`SameSpaceLinks`). Rows of any other
shape are read, hydrated and validated as `hydrate_value` and `session_row_problem`
always did.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from lib.fabric.graph_read import GraphReadError, hydrate_value
from lib.fabric.packed_previews import FIELD as PREVIEWS
from lib.fabric.prior_table import PriorRows
from lib.fabric.same_rows import same_row
from lib.fabric.schemas import FabricSchemaError, parse_session_index, session_row_problem
from lib.fabric.session_graph import GraphTarget
from lib.fabric.stored_values import SameSpaceLinks
from lib.fabric.value_decoding import decode
from lib.fabric.values import Link

if TYPE_CHECKING:
    from lib.fabric.documents import Document
    from lib.fabric.index_store import PriorIndex

PRESERVED_LINK_FIELDS = frozenset({"manifest"})
_SESSIONS = frozenset({"sessions"})


def read_root(target: GraphTarget, cell: str) -> Document | None:
    """The complete index's root document, its row links left as the IDs they are
    stored as (`SameSpaceLinks`) when they are short links into this space (what
    commit_indexes writes): a Link is made for each row when its batch is read, and
    the root's text is never written out long nor parsed link by link (session 24:
    expanding and parsing 25,000 row links held about 30 MB at once, the listing idle
    sync's peak). A root of any other form is read as `store.read` reads it."""
    found = dict(target.store.iter_many(target.space, [cell], keep_fields=_SESSIONS)).get(cell)
    if found is not None and type(found.value) is dict and type(found.value.get("sessions")) is SameSpaceLinks:
        return found
    return target.store.read(target.space, cell)


def read_rows(target: GraphTarget, stored: Any, prior: PriorIndex, batch_size: int) -> None:
    """The complete index's rows into `prior`, `batch_size` at a time, each with its previews left in
    its cell (StoredPreviews): memory holds the rows' own fields, not every preview, and
    hydrating never holds more than one batch of rows. Validated as strictly as
    `parse_session_index(strict=True)` validates a hydrated index."""
    links = stored.get("sessions") if isinstance(stored, dict) else None
    short = type(links) is SameSpaceLinks  # row cell IDs (read_root): each made a Link with its batch
    shell = stored if not (short or isinstance(links, list)) else {**stored, "sessions": []}
    parsed = parse_session_index(
        hydrate_value(target.store, target.space, shell, preserve_link_fields=PRESERVED_LINK_FIELDS),
        bucket="all", strict=True,
    )
    prior.sources = [dict(r) for r in parsed.sources]
    prior.checkouts = [dict(r) for r in parsed.checkouts]
    prior.generation = parsed.generation
    table = prior.rows = PriorRows(target.store, target.space)  # one table, no object per row
    prior.row_links = RowLinks(table)
    for start in range(0, len(links or ()), batch_size):
        batch = links[start : start + batch_size]  # type: ignore[index]
        if short:
            batch = [Link.trusted(cell, target.space) for cell in batch]
        rows, stored = _read_batch(target, batch)
        for position, (link, row, kept) in enumerate(zip(batch, rows, stored, strict=True), start=start):
            previews = row.get(PREVIEWS) if isinstance(row, dict) else None
            stored_previews = kept or (
                type(link) is Link and link.space == target.space and not link.path
                and isinstance(previews, list) and all(type(m) is Link and m.space == target.space for m in previews))
            if isinstance(row, dict) and isinstance(previews, list) and not stored_previews:
                row = {**row, PREVIEWS: hydrate_value(target.store, target.space, previews)}
            problem = session_row_problem({**row, PREVIEWS: []} if stored_previews else row)
            if problem is not None:
                raise _invalid_row(position, row, problem)
            table.add(row, link, stored_previews)
    twice = table.duplicate()
    if twice is not None:
        key = table.row(twice).key
        raise _invalid_row(twice, {"key": key}, f"row {key} appears twice")


def _invalid_row(position: int, row: Any, problem: str) -> FabricSchemaError:
    named = row.get("key") if isinstance(row, dict) and isinstance(row.get("key"), str) else None
    return FabricSchemaError(
        "invalid-index-row",
        f"the all session index's row {position}{f' ({named})' if named else ''} is invalid: "
        f"{problem}; nothing was published: repair or remove that row",
    )


class RowLinks(Mapping[str, Link]):
    """The prior rows' cell links (`PriorIndex.row_links`), each made when asked from its
    row's entry in the table (prior_table.py), which holds the cell's ID: no Link nor
    dict entry a row (issue 14 goal 4). The table is read-only, so a copy is itself."""

    __slots__ = ("_rows",)

    def __init__(self, rows: PriorRows) -> None:
        self._rows = rows

    def get(self, key: str, default: Any = None) -> Any:
        at = self._rows.position(key)
        link = None if at is None else self._rows.link(at)
        return default if link is None else link

    def __getitem__(self, key: str) -> Link:
        link = self.get(key)
        if link is None:
            raise KeyError(key)
        return link

    def __iter__(self) -> Iterator[str]:
        rows = self._rows
        return (key for at, key in enumerate(rows) if rows.link(at) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def values(self) -> Any:  # each link once, made as it is read, without a look-up by key
        rows = self._rows
        return (link for link in map(rows.link, range(len(rows))) if link is not None)

    def copy(self, rows: Mapping[str, Mapping[str, Any]]) -> RowLinks:
        """These links (over the same read-only table)."""
        return self


def linked_as_is(rows: Mapping[str, Any], links: Mapping[str, Link], row: Mapping[str, Any]) -> Link | None:
    """The stored cell's link of a row equal to its prior row (`rows`, linked by `links`),
    else None. A row of the prior table itself takes its link from its place there, with
    no look-up by key."""
    if type(rows) is PriorRows and rows.owns(row):
        return rows.link(row._at)  # type: ignore[attr-defined]
    link = links.get(row["key"])  # one look-up (RowLinks makes the link)
    return link if link is not None and same_row(row, rows[row["key"]]) else None


def _read_batch(target: GraphTarget, batch: list[Any]) -> tuple[list[Any], list[bool]]:
    """A batch of the complete index's rows hydrated as `hydrate_value` hydrates them
    (previews kept as stored), and for each whether its previews are known to be links
    into this space (so left in their cell, as StoredPreviews, unread).

    When every row is a same-space link at no path (what commit_indexes writes), the
    store leaves each row's previews as their fvj1 JSON (`keep_fields`), and a row's
    previews are checked by their JSON's shape without making a Link of each (issue 14
    goal 3: 36,000 of them at 3,000 threads); the SQLite store knows them from their
    stored form, short links only (`SameSpaceLinks`), without writing them out at all.
    Previews of another shape are decoded and judged as before."""
    space = target.space
    if not all(type(link) is Link and link.space == space and not link.path for link in batch):
        rows = hydrate_value(target.store, space, batch, preserve_link_fields=PRESERVED_LINK_FIELDS,
                             keep_fields=_KEPT)
        return rows, [False] * len(rows)
    found = dict(target.store.iter_many(space, [link.id for link in batch], keep_fields=_KEPT))
    rows, stored = [], []
    for link in batch:
        document = found.get(link.id)
        if document is None:
            raise GraphReadError("missing-cell", f"cell {link.id} (the graph root) is missing from space {space}")
        row = document.value
        previews = row.get(PREVIEWS) if type(row) is dict else None
        same_space = previews is not None and (type(previews) is SameSpaceLinks or _same_space_links(previews, space))
        if previews is not None and not same_space:  # decoded, as the store decodes any value
            row = {**row, PREVIEWS: decode(previews)}
        rows.append(row)
        stored.append(same_space)
    rows = hydrate_value(target.store, space, rows, preserve_link_fields=PRESERVED_LINK_FIELDS, keep_fields=_KEPT)
    return rows, stored


_KEPT = frozenset({PREVIEWS})
_PREVIEW_TEXT: dict[str, re.Pattern[bytes]] = {}


def _same_space_links(previews: Any, space: str) -> bool:
    """Whether `previews` (fvj1 JSON) is a list of links into `space` at no path: its
    JSON text against the one shape the encoder writes (one regex match), else each item
    by its structure."""
    if type(previews) is not list:
        return False
    pattern = _PREVIEW_TEXT.get(space)
    if pattern is None:
        item = (rb'\{"/quote":\{"/":\{"link@1":\{"id":"of:(?:[^"\\]|\\.)*","path":\[\],"space":'
                + re.escape(orjson.dumps(space)) + rb"\}\}\}\}")
        pattern = re.compile(rb"\[(?:" + item + rb"(?:," + item + rb")*)?\]")
        if len(_PREVIEW_TEXT) > 16:
            _PREVIEW_TEXT.clear()
        _PREVIEW_TEXT[space] = pattern
    try:
        if pattern.fullmatch(orjson.dumps(previews)):
            return True
    except TypeError:  # what orjson cannot write (json.loads read an int beyond 64 bits)
        pass
    return all(_same_space_link_json(m, space) for m in previews)


def _same_space_link_json(item: Any, space: str) -> bool:
    """Whether `item` is the fvj1 JSON the store decodes to a Link into `space` at no
    path: `{"/quote": {"/": {"link@1": {"id": "of:...", "path": [], "space": space}}}}`."""
    if type(item) is not dict or len(item) != 1:
        return False
    quoted = item.get("/quote")
    if type(quoted) is not dict or len(quoted) != 1:
        return False
    tagged = quoted.get("/")
    if type(tagged) is not dict or len(tagged) != 1:
        return False
    body = tagged.get("link@1")
    if type(body) is not dict or len(body) != 3:
        return False
    link_id, path = body.get("id"), body.get("path")
    return (body.get("space") == space and type(path) is list and not path
            and type(link_id) is str and link_id.startswith("of:"))

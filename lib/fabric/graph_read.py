"""Hydrate a stored cell graph into one detached value (spec `readStableCellGraphValue()`).

`read_graph_value(store, space, root_id)` reads the root cell and replaces every Link to
a cell of the same space by that cell's hydrated value (at the link's path), recursively.
Links to other spaces stay Links. A Link that is the direct value of an object field
named in `preserve_link_fields` stays a Link too (the target preserves `manifest` while
merging indexes, so it does not read every transcript).

Cells are fetched breadth first, one `read_many` per batch of up to READ_BATCH IDs, so
a graph of many small element cells costs a few batched reads, not one query per child.
`cache` maps (space, preserved fields) to {cell id: hydrated value}: a cell linked twice
is read and built once, and a caller may reuse one cache across reads with different
policies (it then also answers later reads without reading: drop it when cells change). Hydrated values may share sub-objects (a repeated link yields the same object
twice); treat the result as read-only or copy it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from lib.errors import CodedError
from lib.fabric.store import Store
from lib.fabric.values import Link

READ_BATCH = 500

HydrationCache = dict[tuple[str, frozenset[str]], dict[str, Any]]


class GraphReadError(CodedError, LookupError):
    """A graph that cannot be hydrated. `code` is stable: missing-cell, link-cycle,
    bad-link-path."""



def read_graph_value(
    store: Store,
    space: str,
    root_id: str,
    *,
    preserve_link_fields: Iterable[str] = frozenset(),
    cache: HydrationCache | None = None,
) -> Any:
    """The root cell's value with its same-space links hydrated."""
    preserve = frozenset(preserve_link_fields)
    built = ({} if cache is None else cache).setdefault((space, preserve), {})
    reader = _Reader(store, space, preserve, built)
    return reader.read(root_id)


def hydrate_value(
    store: Store, space: str, value: Any, *, preserve_link_fields: Iterable[str] = frozenset(),
    keep_fields: Iterable[str] = frozenset(),
) -> Any:
    """`value` (as stored, links in it) with its same-space links hydrated, without a
    cache (memory holds this value's graph only). A field named in `keep_fields` keeps
    its stored value, links and all (the target reads index rows this way, their
    previews left in their cells)."""
    preserve = frozenset(preserve_link_fields)
    reader = _Reader(store, space, preserve | frozenset(keep_fields), {}, keep=frozenset(keep_fields))
    reader.fetch([link.id for link in reader.links(value)], None)
    return reader.hydrate(value)


class _Reader:
    def __init__(
        self, store: Store, space: str, preserve: frozenset[str], built: dict[str, Any],
        keep: frozenset[str] = frozenset(),
    ) -> None:
        self.store = store
        self.space = space
        self.preserve = preserve
        self.keep = keep  # fields left as stored, whatever they hold
        self.built = built  # hydrated values under this read policy, by cell id
        self.raw: dict[str, Any] = {}  # fetched stored values, by cell id
        self.building: set[str] = set()

    def read(self, root_id: str) -> Any:
        self.fetch([root_id], None)
        return self.build(root_id)

    def fetch(self, ids: list[str], linked_from: dict[str, str] | None) -> None:
        """Read ids and, breadth first, every cell their values link to, in batches."""
        parents = linked_from or {}
        frontier = [c for c in dict.fromkeys(ids) if c not in self.raw and c not in self.built]
        while frontier:
            following: dict[str, str] = {}
            for start in range(0, len(frontier), READ_BATCH):
                batch = frontier[start : start + READ_BATCH]
                found = self.store.read_many(self.space, batch)
                for cell in batch:
                    document = found.get(cell)
                    if document is None:
                        raise _missing(cell, parents.get(cell), self.space)
                    self.raw[cell] = document.value
                    for link in self.links(document.value):
                        target = link.id
                        if (
                            target not in self.raw
                            and target not in following
                            and target not in self.built
                        ):
                            following[target] = cell
            parents = following
            frontier = [c for c in following if c not in self.raw]

    def links(self, value: Any) -> Iterator[Link]:
        """The links hydration follows in value (same space, not under a preserved field)."""
        stack = [value]
        space, preserve, keep = self.space, self.preserve, self.keep
        while stack:
            v = stack.pop()
            t = type(v)
            if t is dict:
                for k, x in v.items():
                    tx = type(x)
                    if tx is Link:
                        if x.space == space and k not in preserve:
                            yield x
                    elif (tx is dict or tx is list) and k not in keep:
                        stack.append(x)
            elif t is list:
                for x in v:
                    tx = type(x)
                    if tx is Link:
                        if x.space == space:
                            yield x
                    elif tx is dict or tx is list:
                        stack.append(x)
            elif t is Link and v.space == space:
                yield v

    def build(self, cell: str) -> Any:
        """The hydrated value of a fetched cell (cached)."""
        value = self.built.get(cell, _ABSENT)
        if value is not _ABSENT:
            return value
        if cell in self.building:
            raise GraphReadError(
                "link-cycle", f"cell links back to itself through its children: {cell}"
            )
        if cell not in self.raw:
            self.fetch([cell], None)  # a link reached through a path into a preserved field
        self.building.add(cell)
        try:
            value = self.hydrate(self.raw[cell])
        finally:
            self.building.discard(cell)
        self.built[cell] = value
        return value

    def follow(self, link: Link) -> Any:
        value = self.build(link.id)
        for step in link.path:
            if type(value) is Link and value.space == self.space:
                value = self.follow(value)
            value = _step(value, step, link)
        if type(value) is Link and value.space == self.space:
            return self.follow(value)
        return value

    def hydrate(self, value: Any) -> Any:
        t = type(value)
        if t is Link:
            return self.follow(value) if value.space == self.space else value
        if t is dict:
            out: dict[str, Any] | None = None
            for k, v in value.items():
                tv = type(v)
                if tv is Link:
                    if v.space != self.space or k in self.preserve:
                        continue
                    h = self.follow(v)
                elif tv is dict or tv is list:
                    if k in self.keep:
                        continue
                    h = self.hydrate(v)
                    if h is v:
                        continue
                else:
                    continue
                if out is None:
                    out = dict(value)
                out[k] = h
            return value if out is None else out
        if t is list:
            return [self.hydrate(v) if type(v) in _NESTED else v for v in value]
        return value


_ABSENT = object()
_NESTED = frozenset({dict, list, Link})


def _step(value: Any, step: str | int, link: Link) -> Any:
    try:
        if type(value) is dict and type(step) is str:
            return value[step]
        if type(value) is list and int(step) >= 0:
            return value[int(step)]
    except (KeyError, IndexError, ValueError):
        pass
    raise GraphReadError(
        "bad-link-path", f"link path {list(link.path)!r} does not exist in cell {link.id}"
    )


def _missing(cell: str, parent: str | None, space: str) -> GraphReadError:
    where = f"linked from {parent}" if parent else "the graph root"
    return GraphReadError("missing-cell", f"cell {cell} ({where}) is missing from space {space}")

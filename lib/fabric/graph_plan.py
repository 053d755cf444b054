"""The stable array planner: every array element becomes a child cell (spec "Stable array cells").

`plan_graph(root_cause, root_value, base_scope)` walks the value once, top down. Each
array element gets the cause

    {"agentConnector": "array-element", "scope": <scope>, "path": [<keys>], "identity": <id>}

where scope is base_scope for arrays reached from the root, and the complete cause of the
containing element for arrays inside an element (whose path restarts inside it). Arrays
in values are replaced by arrays of Links to the child cells.

Identity, decided per element from its own top-level fields:
  1. the first of PRIMARY_FIELDS holding a usable value -> {"field": f, "value": v}
  2. sourceId + nativeSessionId -> {"fields": {"sourceId": .., "nativeSessionId": ..}}
  3. any SECONDARY_FIELDS present -> {"fields": {those fields}}
  4. otherwise -> {"contentHash": content hash of the element}
Siblings sharing a primary or pair identity with different content first add
"secondary": {their secondary fields} (so a stable field like `part` tells them apart),
then, if still alike, "collisionHash". Exact duplicates add "duplicate": 1, 2, ... after
the first occurrence. Secondary fields never join an identity that is not colliding:
`contentHash` changes whenever a row changes and would move a keyed row to a new cell.

Links in the data are atomic (never split); UNDEFINED and HOLE entries stay in place,
since a cell whose value is undefined cannot be told from an absent cell.

Content hashes are the value hash of the raw element. An element that needs one is
encoded once into a buffer that records where each nested array element starts and ends,
so nested elements hash their slice of it instead of walking their subtree again. The C
extension (lib._speedups.encode with marks) does this for plain values; `_encode` below
is the same walk in Python for the rest.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import lib.hashing as _hashing
from lib.errors import CodedError
from lib.fabric.cell_id import PREFIX as CELL_ID_PREFIX
from lib.fabric.cell_id import cell_id
from lib.fabric.cell_speedups import CELLS
from lib.fabric.element_identity import (
    IDENTITY_FIELDS,
    PRIMARY_FIELDS,
    extra_secondary,
    is_array,
    is_object,
    natural_identity,
)
from lib.fabric.values import Link
from lib.frozen import FrozenDict, sorted_keys
from lib.hash_stream import _leb128  # the hash stream's own run-length encoding
from lib.hashing import HOLE, UNDEFINED, Unsupported, digest_to_content_hash, encode_value

ELEMENT_CONNECTOR = "array-element"
_LEAF_TYPES = frozenset({str, int, float, bool, type(None)})

_sha256 = hashlib.sha256


class GraphPlanError(CodedError, ValueError):
    """A value or scope the planner cannot place in cells. `code` is stable."""


class PlannedCell(NamedTuple):
    """One planned cell: a named tuple (one per array element; a frozen dataclass costs more)."""

    id: str
    cause: Any
    value: Any


@dataclass(frozen=True, slots=True)
class PlannedGraph:
    """A root cell and its array-element cells, children before the parents linking them."""

    space: str
    root: PlannedCell
    children: tuple[PlannedCell, ...]

    def cells(self) -> tuple[PlannedCell, ...]:
        """Every cell in write order: children first, the root last."""
        return (*self.children, self.root)


def plan_graph(root_cause: Any, root_value: Any, base_scope: Mapping[str, Any]) -> PlannedGraph:
    """Plan the cells of root_value, written to the root cell named by root_cause."""
    scope = dict(base_scope)
    for field in ("spaceDid", "ownerDid", "agentConnector"):
        if not isinstance(scope.get(field), str) or not scope[field]:
            raise GraphPlanError("invalid-scope", f"a base scope names its {field}")
    planner = _Planner(scope["spaceDid"])
    try:
        value = planner.convert(root_value, _Scope(scope, encode_value(scope)), ())
    except RecursionError:
        raise GraphPlanError("too-deep", "value is nested too deeply to plan") from None
    root = PlannedCell(cell_id(root_cause), root_cause, value)
    return PlannedGraph(scope["spaceDid"], root, tuple(planner.cells))


class _Planner:
    def __init__(self, space: str) -> None:
        self.space = space
        self.cells: list[PlannedCell] = []
        # value hash of nested array elements met while encoding an ancestor element,
        # by object id (every node stays alive inside the root value while planning)
        self.digests: dict[int, bytes] = {}

    def convert(self, value: Any, scope: _Scope, path: tuple[str, ...]) -> Any:
        """value with its arrays replaced by arrays of links (the same object if none)."""
        t = type(value)
        if t is list or t is tuple:  # before is_object's costly Mapping check
            return self.plan_array(value, scope, path)
        if t is Link:
            return value  # links are atomic
        if (t is dict or t is FrozenDict) and _nested_keys is not None:
            nested = _nested_keys(value)  # lib._cells: None when no array is below
            return value if nested is None else self.convert_fields(value, nested, scope, path)
        if t is dict or (t is not str and is_object(value)):
            nested = [k for k, v in value.items() if type(v) not in _LEAF_TYPES]
            return self.convert_fields(value, nested, scope, path)
        if t is list or t is tuple or (t is not str and is_array(value)):
            return self.plan_array(value, scope, path)
        return value

    def convert_fields(self, value: Any, nested: list[Any], scope: _Scope, path: tuple[str, ...]) -> Any:
        """An object with the values of its `nested` keys (those not plain scalars) converted."""
        out: dict[str, Any] | None = None
        if len(nested) > 1:
            nested = _sorted(nested)  # cells in the same order whatever the key order
        for k in nested:
            v = value[k]
            c = self.convert(v, scope, (*path, k))
            if c is not v:
                if out is None:
                    out = dict(value)
                out[k] = c
        if out is None:
            return value if isinstance(value, dict) else dict(value)
        return out

    def plan_array(self, items: Any, scope: _Scope, path: tuple[str, ...]) -> list[Any]:
        if not items:
            return []  # no cells (a third of a Codex session's arrays are empty)
        identities = self.identities(items)
        path_list = list(path)
        # the cause's encoding, keys in order: agentConnector, identity, path, scope
        tail = _PATH_KEY + encode_value(path_list) + _SCOPE_KEY + scope.encoded + b"\x00"
        ids = _ids_of_causes([found[1] for found in identities if found is not None], tail)
        links = made = _links_to(ids, self.space)  # cell IDs made here, the graph's space
        if len(made) < len(identities):  # HOLE or UNDEFINED elements stay in place
            rest = iter(made)
            links = [item if found is None else next(rest) for item, found in zip(items, identities, strict=True)]
        at = 0
        nested_keys = _nested_keys
        cells = self.cells
        for item, found in zip(items, identities, strict=True):
            if found is None:
                continue
            cause = {
                "agentConnector": ELEMENT_CONNECTOR,
                "scope": scope.cause,
                "path": path_list,
                "identity": found[0],
            }
            # children of this element are scoped by its complete cause, paths restart
            t = type(item)
            if (t is dict or t is FrozenDict) and nested_keys is not None:
                nested = nested_keys(item)  # None: no array below it, nothing to plan
                value: Any = item if nested is None else self.convert_fields(
                    item, nested, _Scope(cause, _CAUSE_HEAD + found[1] + tail), ())
            elif t is list or t is tuple or (t is not dict and is_array(item)):
                value = self.plan_array(item, _Scope(cause, _CAUSE_HEAD + found[1] + tail), ())
            else:
                value = self.convert(item, _Scope(cause, _CAUSE_HEAD + found[1] + tail), ())
            cells.append(_new_tuple(PlannedCell, (ids[at], cause, value)))
            at += 1
        return links

    def identities(self, items: Any) -> list[tuple[dict[str, Any], bytes] | None]:
        """Each element's final identity and its encoding, collisions and duplicates resolved."""
        fast = _hashing._c_encode
        if _element_identities is not None and fast is not None and type(items) in (list, tuple):
            # lib._cells: the elements a primary field names, in one call; the rest below
            out, pending = _element_identities(items, PRIMARY_FIELDS, _IDENTITY_FIELDS, fast)
        else:
            out, pending = [None] * len(items), range(len(items))
        digests: list[bytes | None] = [None] * len(out)
        for i in pending:
            item = items[i]
            if item is HOLE or item is UNDEFINED:
                continue
            identity = natural_identity(item)
            if identity is None:
                digest = digests[i] = self.digest(item)
                identity = {"contentHash": digest_to_content_hash(digest)}
            out[i] = (identity, encode_value(identity))
        encoded = [found[1] for found in out if found is not None]
        if len(set(encoded)) < len(encoded):  # siblings sharing an identity: tell them apart
            groups: dict[bytes, list[int]] = {}
            for i, found in enumerate(out):
                if found is not None:
                    groups.setdefault(found[1], []).append(i)
            for members in groups.values():
                if len(members) > 1:
                    self.resolve(items, members, out, digests)
        return out

    def resolve(
        self, items: Any, members: list[int], out: list[Any], digests: list[bytes | None]
    ) -> None:
        """Tell apart siblings sharing one identity: secondary, collisionHash, duplicate."""
        for i in members:
            if digests[i] is None:
                digests[i] = self.digest(items[i])
        ids = {i: out[i][0] for i in members}
        if len({digests[i] for i in members}) > 1:
            subgroups: dict[bytes, list[int]] = {}
            for i in members:
                secondary = extra_secondary(items[i], ids[i])
                if secondary:
                    ids[i] = {**ids[i], "secondary": secondary}
                subgroups.setdefault(encode_value(ids[i]), []).append(i)
            for sub in subgroups.values():
                if len({digests[i] for i in sub}) > 1:
                    for i in sub:
                        ids[i] = {**ids[i], "collisionHash": _hex(digests[i])}
        seen: dict[bytes, int] = {}
        for i in members:
            d = digests[i]
            assert d is not None
            n = seen.get(d, 0)
            if n:
                ids[i] = {**ids[i], "duplicate": n}
            seen[d] = n + 1
        for i in members:
            if ids[i] is not out[i][0]:
                out[i] = (ids[i], encode_value(ids[i]))

    def digest(self, item: Any) -> bytes:
        """The value hash of an element, from the record of an ancestor's encoding if any."""
        if not (is_object(item) or is_array(item)):
            return _sha256(encode_value(item)).digest()
        known = self.digests.pop(id(item), None)
        if known is not None:
            return known
        marks: list[tuple[int, int, int]] = []
        stream: bytes | bytearray | None = None
        fast = _hashing._c_encode
        if fast is not None:
            try:
                stream = fast(item, marks)  # the same stream and marks, from C
            except Unsupported:
                marks.clear()
        if stream is None:
            stream = bytearray()
            try:
                _encode(item, stream, marks)
            except RecursionError:
                raise GraphPlanError("too-deep", "value is nested too deeply to hash") from None
        view = memoryview(stream)
        sha = _digest_of
        for key, start, end in marks:
            self.digests[key] = sha(view[start:end])
        whole = sha(view)
        view.release()
        return whole


class _Scope:
    """A scope value and its encoding (the parent cause encoded once, reused by children);
    a plain slots class: one is made per array element, a frozen dataclass costs more."""

    __slots__ = ("cause", "encoded")

    def __init__(self, cause: dict[str, Any], encoded: bytes) -> None:
        self.cause = cause
        self.encoded = encoded


def _hex(digest: bytes | None) -> str:
    assert digest is not None
    return digest_to_content_hash(digest)


# The fixed parts of an array-element cause's encoding, and of `{"causal": cause}`.
_CAUSE_HEAD = (
    b"\x11"
    + encode_value("agentConnector")
    + encode_value(ELEMENT_CONNECTOR)
    + encode_value("identity")
)
_PATH_KEY = encode_value("path")
_SCOPE_KEY = encode_value("scope")
_CAUSAL_HEAD = b"\x11" + encode_value("causal")


def _id_of_encoded_cause(encoded: bytes) -> str:
    """cell_id(cause) from the cause's encoding (a test holds the two equal)."""
    digest = _sha256(_CAUSAL_HEAD + encoded + b"\x00").digest()
    return CELL_ID_PREFIX + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _ids_of_causes(identities: list[bytes], tail: bytes) -> list[str]:
    """_id_of_encoded_cause(_CAUSE_HEAD + identity + tail) of each identity encoding, one
    call to lib._cells (joined in its buffer; Python joins a cause only as a child scope)."""
    if CELLS is not None:
        return CELLS.cause_ids(_CAUSAL_HEAD + _CAUSE_HEAD, identities, tail + b"\x00")
    return [_id_of_encoded_cause(_CAUSE_HEAD + i + tail) for i in identities]


def _links_to(ids: list[str], space: str) -> list[Link]:
    """Link.trusted to each ID, in one call to lib._cells when it is there."""
    if CELLS is not None:
        return CELLS.links(ids, space)
    return [Link.trusted(i, space) for i in ids]


_new_tuple = tuple.__new__  # PlannedCell((id, cause, value)) without its Python __new__
_nested_keys = CELLS.nested_keys if CELLS is not None else None
_element_identities = CELLS.element_identities if CELLS is not None else None
_IDENTITY_FIELDS = tuple(sorted(IDENTITY_FIELDS))


def _hashlib_digest(data: Any) -> bytes:
    return _sha256(data).digest()


# sha256(data).digest(): lib._cells calls libcrypto directly, without a hashlib object
_digest_of = CELLS.sha256 if CELLS is not None else _hashlib_digest


def _sorted(keys: Any) -> list[str]:
    try:
        return sorted_keys(keys)
    except TypeError:
        raise GraphPlanError("unsupported-value", "object keys must be strings") from None


_str_cache: dict[str, bytes] = {}


def _encode_str(s: str) -> bytes:
    """encode_value(s), remembering short strings (keys and enum-like values repeat)."""
    e = _str_cache.get(s)
    if e is None:
        e = encode_value(s)
        if len(s) <= 64:
            if len(_str_cache) >= 1 << 16:
                _str_cache.clear()
            _str_cache[s] = e
    return e


def _encode(v: Any, buf: bytearray, marks: list[tuple[int, int, int]]) -> None:
    """lib.hashing's byte stream for v, noting the span of every nested container element.

    Scalars, keys and links go through lib.hashing.encode_value; only the container
    framing (tags, key order, hole runs) is written here, and a test checks the result
    against lib.hashing.value_hash.
    """
    t = type(v)
    if t is dict or (t is not str and is_object(v)):
        buf += b"\x11"
        for k in _sorted(v):
            buf += _encode_str(k)
            x = v[k]
            if type(x) is str:
                buf += _encode_str(x)
            else:
                _encode(x, buf, marks)
        buf += b"\x00"
    elif t is list or t is tuple or (t is not str and is_array(v)):
        buf += b"\x10"
        holes = 0
        for x in v:
            if x is HOLE:
                holes += 1
                continue
            if holes:
                buf += b"\x01" + _leb128(holes)
                holes = 0
            tx = type(x)
            if tx is str:
                buf += _encode_str(x)
            elif tx is dict or tx is list or tx is tuple or is_object(x) or is_array(x):
                start = len(buf)
                _encode(x, buf, marks)
                marks.append((id(x), start, len(buf)))
            else:
                buf += encode_value(x)
        if holes:
            buf += b"\x01" + _leb128(holes)
        buf += b"\x00"
    else:
        buf += encode_value(v)

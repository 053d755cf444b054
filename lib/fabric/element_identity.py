"""Which identity an array element's own fields give it (spec "Stable array cells").

Rules, in order: the first of PRIMARY_FIELDS holding a usable value; the pair
sourceId + nativeSessionId; the SECONDARY_FIELDS present; otherwise none (the planner
falls back to the element's content hash). The planner in `graph_plan` adds the
collision rules on top.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

PRIMARY_FIELDS = ("key", "id", "uuid", "commandId", "messageId", "toolCallId", "toolUseId")
PAIR_FIELDS = ("sourceId", "nativeSessionId")
SECONDARY_FIELDS = ("nativeSessionId", "sessionId", "part", "contentHash")
IDENTITY_FIELDS = frozenset(PRIMARY_FIELDS + PAIR_FIELDS + SECONDARY_FIELDS)


def natural_identity(element: Any) -> dict[str, Any] | None:
    """The identity an element's own fields give it (rules 1-3), or None."""
    if type(element) is not dict and not is_object(element):
        return None
    if IDENTITY_FIELDS.isdisjoint(element.keys()):
        return None  # the common case for provider events: one set test, no lookups
    get = element.get
    for field in PRIMARY_FIELDS:
        v = get(field)
        if v is not None and _usable(v):
            return {"field": field, "value": v}
    source, session = get("sourceId"), get("nativeSessionId")
    if _usable(source) and _usable(session):
        return {"fields": {"sourceId": source, "nativeSessionId": session}}
    secondary = _secondary(element)
    return {"fields": secondary} if secondary else None


def _usable(v: Any) -> bool:
    """Identity values are non-empty strings and finite numbers (never booleans)."""
    if type(v) is str:
        return v != ""
    if isinstance(v, str):
        return False  # a str subclass (an Enum member) names itself ambiguously
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and math.isfinite(v)


def _secondary(element: Any) -> dict[str, Any]:
    get = element.get
    return {f: get(f) for f in SECONDARY_FIELDS if _usable(get(f))}


def extra_secondary(element: Any, identity: dict[str, Any]) -> dict[str, Any]:
    """Secondary fields that can tell apart elements sharing a primary or pair identity."""
    if "field" in identity:
        return _secondary(element)
    if identity.get("fields", {}).keys() == set(PAIR_FIELDS):
        return {f: v for f, v in _secondary(element).items() if f not in PAIR_FIELDS}
    return {}  # a secondary or content-hash identity already holds them all


def is_object(v: Any) -> bool:
    return type(v) is dict or (isinstance(v, Mapping) and not hasattr(v, "__fabric_json__"))


def is_array(v: Any) -> bool:
    t = type(v)
    return (
        t is list
        or t is tuple
        or (isinstance(v, list | tuple) and not hasattr(v, "__fabric_json__"))
    )

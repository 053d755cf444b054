"""A source's row in the session indexes: its status in one publication (spec "Session
indexes"; session_index.py's other rows)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MAX_SOURCE_ERRORS = 20


def source_row(
    source: Mapping[str, Any],
    *,
    inventory_complete: bool,
    complete: bool,
    observed_at: str,
    listed: int,
    read: int,
    retained: int,
    errors: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """One source's status in this publication. `source` is a SourceDescriptor wire dict.

    `id` repeats the source ID so the row keeps one stable array cell across
    publications (without it the row's identity would be a content hash).
    """
    return {
        "id": source["id"],
        "sourceId": source["id"],
        "driver": source.get("driver"),
        "providerVersion": source.get("providerVersion"),
        "capabilities": dict(source.get("capabilities") or {}),
        "inventoryComplete": inventory_complete,
        "complete": complete,
        "observedAt": observed_at,
        "listed": listed,
        "read": read,
        "retained": retained,
        "errorCount": len(errors),
        "errors": [error_entry(e) for e in errors[:MAX_SOURCE_ERRORS]],
    }


def error_entry(error: Mapping[str, Any]) -> dict[str, Any]:
    entry = {
        "code": error.get("code"),
        "message": error.get("message"),
        "nativeSessionId": error.get("nativeSessionId"),
    }
    if error.get("stage"):
        entry["stage"] = error["stage"]
    return entry

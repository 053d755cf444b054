"""Our Codex listing cursors, the `thread/list` parameters of each page, and the
`initialize` parameters that precede them.

Standard library only: the idle fast path's early listing (codex_early_list.py) asks
Codex for the first pages with exactly the parameters the driver would, before pydantic
or the driver's modules are imported (codex_threads.py re-exports these).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself is not imported on the fast path
if TYPE_CHECKING:
    from typing import Any

ACTIVE_PREFIX = "active:"
ARCHIVED_PREFIX = "archived:"
ARCHIVED_START = ARCHIVED_PREFIX
SOURCE_KINDS = [
    "cli", "vscode", "exec", "appServer", "subAgent", "subAgentReview", "subAgentCompact",
    "subAgentThreadSpawn", "subAgentOther", "unknown",
]


def initialize_params(client_version: str) -> dict[str, Any]:
    """The `initialize` request's parameters, the driver's and the early listing's alike
    (the driver adopts an early child only when it was initialized with its version)."""
    return {
        "clientInfo": {"name": "agentctl", "title": "agentctl", "version": client_version},
        "capabilities": {"experimentalApi": False},
    }


def parse_cursor(cursor: str | None) -> tuple[bool, str | None]:
    """(archived listing?, provider cursor) for one of our cursors; DriverError otherwise.

    None starts the active listing; `active:<c>` continues it; `archived:` starts the
    archived listing and `archived:<c>` continues it.
    """
    if cursor is None:
        return False, None
    if cursor.startswith(ACTIVE_PREFIX) and len(cursor) > len(ACTIVE_PREFIX):
        return False, cursor[len(ACTIVE_PREFIX) :]
    if cursor.startswith(ARCHIVED_PREFIX):
        return True, cursor[len(ARCHIVED_PREFIX) :] or None
    from lib.drivers.base import (
        DriverError,  # only a cursor we did not make needs it (and pydantic)
    )

    raise DriverError(
        "invalid-cursor",
        f"cursor {cursor!r} is not one this driver made: expected 'active:<cursor>', "
        f"'archived:' or 'archived:<cursor>'",
    )


def next_cursor(archived: bool, provider_cursor: str | None) -> str | None:
    if provider_cursor:
        return (ARCHIVED_PREFIX if archived else ACTIVE_PREFIX) + provider_cursor
    return None if archived else ARCHIVED_START


def list_params(cursor: str | None, page_size: int) -> tuple[bool, dict[str, Any]]:
    """Whether our `cursor` lists archived threads, and the `thread/list` parameters of its page."""
    archived, provider_cursor = parse_cursor(cursor)
    return archived, {
        "limit": page_size,
        "cursor": provider_cursor,
        "archived": archived,
        "sortKey": "created_at",
        "sortDirection": "desc",
        "modelProviders": [],  # empty = every provider; omitted = only the configured one
        "sourceKinds": SOURCE_KINDS,  # omitted = interactive sources only
    }


def page_follows(archived: bool, result: Any) -> str | None:
    """Our cursor after an answered `thread/list` page (None after the last)."""
    return next_cursor(archived, result.get("nextCursor")) if isinstance(result, dict) else None

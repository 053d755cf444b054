"""Cell identity: a cell is named by the hash of its cause, and links point at cells.

`cell_id(cause)` is `of:fid1:` + unpadded base64url of the value hash of
`{"causal": cause}`, so the same cause names the same cell here and in a real
Common Fabric space. The top-level causes below are the spec's table
(connector-interfaces.md, "Top-level cell causes"): every one carries the
destination `spaceDid` and `ownerDid`.
"""

from __future__ import annotations

import base64
from typing import Any

from lib.fabric.values import Link
from lib.hashing import value_hash

PREFIX = "of:fid1:"


def cell_id(cause: Any) -> str:
    """The ID of the cell named by cause (any Fabric value)."""
    digest = value_hash({"causal": cause})
    return PREFIX + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def link_to(cell: str, space: str, path: tuple[str | int, ...] | list[str | int] = ()) -> Link:
    """A link to cell (an ID) in space, at path inside its value."""
    return Link(cell, space, tuple(path))


def _base(space_did: str, owner_did: str, kind: str) -> dict[str, Any]:
    return {"spaceDid": space_did, "ownerDid": owner_did, "agentConnector": kind}


def recent_session_index_cause(space_did: str, owner_did: str) -> dict[str, Any]:
    return _base(space_did, owner_did, "recent-session-index")


def all_session_index_cause(space_did: str, owner_did: str) -> dict[str, Any]:
    return _base(space_did, owner_did, "all-session-index")


def health_cause(space_did: str, owner_did: str) -> dict[str, Any]:
    return _base(space_did, owner_did, "health")


def commands_cause(space_did: str, owner_did: str, producer: str | None = None) -> dict[str, Any]:
    """The owner's command queue, or the queue bound to one producer pattern."""
    cause = _base(space_did, owner_did, "commands")
    if producer is not None:
        cause["producer"] = producer
    return cause


def receipts_cause(space_did: str, owner_did: str) -> dict[str, Any]:
    """The receipt index."""
    return _base(space_did, owner_did, "receipts")


def session_version_cause(
    space_did: str,
    owner_did: str,
    *,
    source_id: str,
    native_session_id: str,
    driver: str,
    content_hash: str,
) -> dict[str, Any]:
    """One immutable manifest version; content_hash is the complete manifest graph's hash."""
    cause = _base(space_did, owner_did, "session-version")
    cause.update(
        sourceId=source_id,
        nativeSessionId=native_session_id,
        driver=driver,
        contentHash=content_hash,
    )
    return cause


def session_chunk_cause(
    space_did: str,
    owner_did: str,
    *,
    source_id: str,
    native_session_id: str,
    part: int,
    content_hash: str,
) -> dict[str, Any]:
    """One content-addressed event chunk of a session."""
    cause = _base(space_did, owner_did, "session-chunk")
    cause.update(
        sourceId=source_id,
        nativeSessionId=native_session_id,
        part=part,
        contentHash=content_hash,
    )
    return cause


def command_receipt_cause(
    space_did: str, owner_did: str, *, command_id: str, producer: str | None = None
) -> dict[str, Any]:
    """The individual receipt of one command, qualified by its producer's queue when named."""
    cause = _base(space_did, owner_did, "command-receipt")
    cause["commandId"] = command_id
    if producer is not None:
        cause["producer"] = producer
    return cause

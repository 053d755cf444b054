"""The connector's stored formats: schema names, array-scope names, and the readers'
validation of the fields the target uses (spec "Schema names", "Session indexes").

Readers permit additional fields (newer writers add optional ones) and validate only
what they use. One function per format, used by every reader of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from lib.errors import CodedError
from lib.fabric.values import Link

SESSION_SCHEMA = "commonfabric.agent-connector.session"
SESSION_CHUNK_SCHEMA = "commonfabric.agent-connector.session-chunk"
SESSION_INDEX_SCHEMA = "commonfabric.agent-connector.session-index"
HEALTH_SCHEMA = "commonfabric.agent-connector.health"
COMMAND_SCHEMA = "commonfabric.agent-connector.command"
COMMAND_RECEIPT_SCHEMA = "commonfabric.agent-connector.command-receipt"
COMMAND_RECEIPTS_SCHEMA = "commonfabric.agent-connector.command-receipts"
COMMAND_LEDGER_SCHEMA = "commonfabric.agent-connector.command-ledger"

# Every format discriminator, under the TypeScript export's member names.
AGENT_CONNECTOR_SCHEMAS: Mapping[str, str] = MappingProxyType(
    {
        "session": SESSION_SCHEMA,
        "sessionChunk": SESSION_CHUNK_SCHEMA,
        "sessionIndex": SESSION_INDEX_SCHEMA,
        "health": HEALTH_SCHEMA,
        "command": COMMAND_SCHEMA,
        "commandReceipt": COMMAND_RECEIPT_SCHEMA,
        "commandReceipts": COMMAND_RECEIPTS_SCHEMA,
        "commandLedger": COMMAND_LEDGER_SCHEMA,
    }
)

# Base `agentConnector` of the array-element scope of each stored value (spec table).
SESSION_EVENTS_ARRAY_SCOPE = "session-events-array-elements"
SESSION_ARRAY_SCOPE = "session-array-elements"
SESSION_INDEX_ARRAY_SCOPE = "session-index-array-elements"
HEALTH_ARRAY_SCOPE = "health-array-elements"
COMMAND_RECEIPT_ARRAY_SCOPE = "command-receipt-array-elements"
RECEIPT_INDEX_ARRAY_SCOPE = "command-receipt-index-array-elements"

SYNC_STATUSES = frozenset({"complete", "partial", "stale", "deleted"})
INDEX_BUCKETS = frozenset({"recent", "all"})


class FabricSchemaError(CodedError, ValueError):
    """A stored value that does not have the format its cell promises. `code` is stable."""



def scope(space_did: str, owner_did: str, kind: str, **identity: Any) -> dict[str, Any]:
    """The base array-element scope of one stored value: space, owner, kind, identity."""
    return {"spaceDid": space_did, "ownerDid": owner_did, "agentConnector": kind, **identity}


@dataclass
class ParsedIndex:
    """The fields of a session index the target uses; rows stay plain dicts."""

    bucket: str
    generation: int
    generated_at: str | None
    sources: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[dict[str, Any]] = field(default_factory=list)
    checkouts: list[dict[str, Any]] = field(default_factory=list)
    dropped_rows: int = 0


def _is_str(v: Any) -> bool:
    return type(v) is str and v != ""


def _optional_str(v: Any) -> bool:
    return v is None or type(v) is str


def session_row_problem(row: Any) -> str | None:
    """Why a stored session index row cannot be used, or None when it can."""
    if not isinstance(row, dict):
        return "a row is an object"
    for name in ("key", "sourceId", "nativeSessionId", "driver", "snapshotHash", "manifestHash"):
        if not _is_str(row.get(name)):
            return f"a row names its {name}"
    if row.get("status") not in SYNC_STATUSES:
        return f"row {row['key']} has an unknown status {row.get('status')!r}"
    if not isinstance(row.get("manifest"), Link):
        return f"row {row['key']} links its manifest"
    for name in ("title", "cwd", "createdAt", "updatedAt", "gitRepo", "gitBranch", "gitWorktreeRoot"):
        if not _optional_str(row.get(name)):
            return f"row {row['key']} has a non-string {name}"
    for name in ("archived", "active"):
        if row.get(name) is not None and type(row.get(name)) is not bool:
            return f"row {row['key']} has a non-boolean {name}"
    if row["status"] == "deleted" and not _is_str(row.get("deletedAt")):
        return f"deleted row {row['key']} keeps its deletedAt"
    messages = row.get("recentMessages", [])
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return f"row {row['key']} holds recentMessages as a list of objects"
    return None


def parse_session_index(value: Any, *, bucket: str, strict: bool = False) -> ParsedIndex:
    """Validate a stored (hydrated) session index.

    A value that is not a session index of this bucket is an error: the target never
    replaces what it cannot read. A session row that fails validation is an error too
    when `strict` (a publication: dropping it would let its session vanish without
    ever being marked deleted); readers drop and count such rows and show the rest.
    """
    if not isinstance(value, dict):
        raise FabricSchemaError("invalid-index", f"the {bucket} session index is not an object")
    if value.get("schema") != SESSION_INDEX_SCHEMA:
        raise FabricSchemaError(
            "invalid-index", f"the {bucket} session index has schema {value.get('schema')!r}"
        )
    if value.get("bucket") != bucket:
        raise FabricSchemaError(
            "invalid-index", f"the {bucket} session index names bucket {value.get('bucket')!r}"
        )
    generation = value.get("generation")
    if type(generation) is not int or generation < 0:
        raise FabricSchemaError("invalid-index", f"the {bucket} session index has no generation")
    parsed = ParsedIndex(bucket=bucket, generation=generation, generated_at=value.get("generatedAt"))
    for name in ("sources", "sessions", "checkouts"):
        rows = value.get(name, [])
        if not isinstance(rows, list):
            raise FabricSchemaError("invalid-index", f"the {bucket} session index {name} is a list")
    seen: set[str] = set()
    for position, row in enumerate(value.get("sessions", [])):
        problem = session_row_problem(row)
        if problem is None and row["key"] in seen:
            problem = f"row {row['key']} appears twice"
        if problem is not None:
            if strict:
                named = row.get("key") if isinstance(row, dict) and _is_str(row.get("key")) else None
                raise FabricSchemaError(
                    "invalid-index-row",
                    f"the {bucket} session index's row {position}"
                    f"{f' ({named})' if named else ''} is invalid: {problem}; "
                    f"nothing was published: repair or remove that row",
                )
            parsed.dropped_rows += 1
            continue
        seen.add(row["key"])
        parsed.sessions.append(row)
    for row in value.get("sources", []):
        if isinstance(row, dict) and _is_str(row.get("sourceId")):
            parsed.sources.append(row)
        else:
            parsed.dropped_rows += 1
    for row in value.get("checkouts", []):
        if isinstance(row, dict) and _is_str(row.get("root")):
            parsed.checkouts.append(row)
        else:
            parsed.dropped_rows += 1
    return parsed


def parse_manifest(value: Any) -> dict[str, Any]:
    """Validate a hydrated or shallow session manifest; returns it unchanged."""
    if not isinstance(value, dict) or value.get("schema") != SESSION_SCHEMA:
        raise FabricSchemaError("invalid-manifest", "a session manifest has the session schema")
    for name in ("key", "sourceId", "nativeSessionId", "driver", "snapshotHash"):
        if not _is_str(value.get(name)):
            raise FabricSchemaError("invalid-manifest", f"a session manifest names its {name}")
    chunks = value.get("chunks")
    if not isinstance(chunks, list) or not chunks:
        raise FabricSchemaError("invalid-manifest", f"manifest {value['key']} lists its chunks")
    for chunk in chunks:
        if not isinstance(chunk, dict) or type(chunk.get("part")) is not int:
            raise FabricSchemaError("invalid-manifest", f"manifest {value['key']} has a bad chunk descriptor")
    return value


def parse_chunk(value: Any) -> dict[str, Any]:
    """Validate a hydrated event chunk; returns it unchanged."""
    if not isinstance(value, dict) or value.get("schema") != SESSION_CHUNK_SCHEMA:
        raise FabricSchemaError("invalid-chunk", "an event chunk has the session-chunk schema")
    if type(value.get("part")) is not int or not _is_str(value.get("contentHash")):
        raise FabricSchemaError("invalid-chunk", "an event chunk names its part and content hash")
    if not isinstance(value.get("events"), list):
        raise FabricSchemaError("invalid-chunk", f"chunk {value['part']} holds its events")
    return value

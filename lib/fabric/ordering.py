"""Observation ordering: an older observation never undoes a newer one.

Every full collection allocates an observation sequence before its first provider
read (`store.next_sequence(space, "observation")`, so the order holds across
processes), and a targeted refresh allocates one before its session read. The target
remembers, per space:

- for each session key, the newest sequence that published (or deleted) it;
- for each source, the newest sequence whose inventory was complete;
- for each source, the newest sequence that wrote its source row (capabilities,
  verdict), so an older run never reverts a newer row.

Three rules follow (spec "Fabric target"; each is a pure method below):

1. A session whose remembered sequence is newer than this observation keeps its
   newer graph, row and status (`keeps_newer`).
2. A complete inventory does not delete a session remembered as newer (`may_delete`).
3. An older complete inventory never re-adds a session that a newer complete
   inventory of its source left out: a session with no live row is not added by an
   observation older than its source's newest complete one (`may_add`).

Where the state lives: the spec keeps it in one process and not in Fabric. Here
publishers are separate processes, and the state must change atomically with the
index it describes, so it is kept in one owner-protected cell of its own cause
(`agentConnector: "observation-ordering"`) that the index commit writes in the same
transaction. No index links it. (A store-level meta table would keep it out of the
space entirely; see the report that came with this module.)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ORDERING_CONNECTOR = "observation-ordering"
ORDERING_SCHEMA = "agentctl.observation-ordering"
SEQUENCE_NAME = "observation"


def ordering_cause(space_did: str, owner_did: str) -> dict[str, Any]:
    return {"spaceDid": space_did, "ownerDid": owner_did, "agentConnector": ORDERING_CONNECTOR}


@dataclass
class OrderingState:
    sessions: dict[str, int] = field(default_factory=dict)
    complete_sources: dict[str, int] = field(default_factory=dict)
    source_rows: dict[str, int] = field(default_factory=dict)

    # -- the rules ---------------------------------------------------------------------

    def keeps_newer(self, key: str, sequence: int) -> bool:
        """Rule 1: a newer observation already published (or deleted) this session."""
        return self.sessions.get(key, 0) > sequence

    def keeps_newer_source_row(self, source_id: str, sequence: int) -> bool:
        """A newer observation already wrote this source's row."""
        return self.source_rows.get(source_id, 0) > sequence

    def may_delete(self, key: str, sequence: int) -> bool:
        """Rule 2: a complete inventory at `sequence` may delete an unlisted session."""
        return not self.keeps_newer(key, sequence)

    def may_add(self, source_id: str, sequence: int, *, has_live_row: bool) -> bool:
        """Rule 3: a session without a live row is added only by an observation at
        least as new as its source's newest complete inventory."""
        return has_live_row or self.complete_sources.get(source_id, 0) <= sequence

    # -- recording ---------------------------------------------------------------------

    def record_session(self, key: str, sequence: int) -> None:
        if sequence > self.sessions.get(key, 0):
            self.sessions[key] = sequence

    def record_complete_source(self, source_id: str, sequence: int) -> None:
        if sequence > self.complete_sources.get(source_id, 0):
            self.complete_sources[source_id] = sequence

    def record_source_row(self, source_id: str, sequence: int) -> None:
        if sequence > self.source_rows.get(source_id, 0):
            self.source_rows[source_id] = sequence

    def merged(self, recorded: OrderingState) -> OrderingState:
        """This state with another's records added (newest wins)."""
        out = OrderingState(dict(self.sessions), dict(self.complete_sources), dict(self.source_rows))
        for key, seq in recorded.sessions.items():
            out.record_session(key, seq)
        for source_id, seq in recorded.complete_sources.items():
            out.record_complete_source(source_id, seq)
        for source_id, seq in recorded.source_rows.items():
            out.record_source_row(source_id, seq)
        return out

    # -- the stored value --------------------------------------------------------------

    def to_value(self, owner_did: str) -> dict[str, Any]:
        return {
            "schema": ORDERING_SCHEMA,
            "ownerDid": owner_did,
            "sessions": _sorted(self.sessions),
            "completeSources": _sorted(self.complete_sources),
            "sourceRows": _sorted(self.source_rows),
        }

    @staticmethod
    def from_value(value: Any) -> OrderingState:
        """The stored state; anything unreadable counts as no state (never newer)."""
        if not isinstance(value, Mapping) or value.get("schema") != ORDERING_SCHEMA:
            return OrderingState()
        return OrderingState(
            _sequences(value.get("sessions")),
            _sequences(value.get("completeSources")),
            _sequences(value.get("sourceRows")),
        )


def _sorted(sequences: dict[str, int]) -> dict[str, int]:
    """`sequences` in key order, by sorting the keys alone: a sorted list of (key,
    sequence) pairs held a tuple a session at the commit (issue 14 goal 4). Itself when
    it is in key order already (read from the stored value, and only known sessions
    recorded since): a copy was a dict of every session in the commit's final
    transaction, where its peak is."""
    keys = sorted(sequences)
    if all(a is b or a == b for a, b in zip(keys, sequences, strict=True)):
        return sequences
    return {key: sequences[key] for key in keys}


def _sequences(value: Any) -> dict[str, int]:
    """The valid entries; keys interned, so a session's key is one string with its index
    row's (packed_rows.py interns those): 25,000 sessions held a second copy of each."""
    if not isinstance(value, Mapping):
        return {}
    return {sys.intern(k): v for k, v in value.items() if type(k) is str and type(v) is int and v > 0}

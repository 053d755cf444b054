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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lib.fabric import value_decoding
from lib.fabric.ordering_table import Buffers, SessionSequences
from lib.fabric.ordering_text import read_entries, read_pieces, text_of

ORDERING_CONNECTOR = "observation-ordering"
ORDERING_SCHEMA = "agentctl.observation-ordering"
SEQUENCE_NAME = "observation"
_LARGEST = 2**63 - 1  # a table's sequence is a signed 64-bit int, as every store's is


def ordering_cause(space_did: str, owner_did: str) -> dict[str, Any]:
    return {"spaceDid": space_did, "ownerDid": owner_did, "agentConnector": ORDERING_CONNECTOR}


@dataclass
class OrderingState:
    # session key -> sequence, one table (ordering_table.py); a dict given is made one
    sessions: SessionSequences = field(default_factory=SessionSequences)
    complete_sources: dict[str, int] = field(default_factory=dict)
    source_rows: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if type(self.sessions) is not SessionSequences:
            self.sessions = SessionSequences(dict(self.sessions).items())

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
        self.sessions.record(key, sequence)

    def record_complete_source(self, source_id: str, sequence: int) -> None:
        if sequence > self.complete_sources.get(source_id, 0):
            self.complete_sources[source_id] = sequence

    def record_source_row(self, source_id: str, sequence: int) -> None:
        if sequence > self.source_rows.get(source_id, 0):
            self.source_rows[source_id] = sequence

    def recording(self) -> OrderingState:
        """An empty state to record a publication's observations in: its sessions' table
        shares this state's keys, so recording a known session copies no key and
        `merged` adds the records without a look-up each."""
        return OrderingState(self.sessions.recording())

    def merged(self, recorded: OrderingState) -> OrderingState:
        """This state with another's records added (newest wins); neither is changed."""
        sessions = self.sessions.merged(recorded.sessions)
        out = OrderingState(sessions, dict(self.complete_sources), dict(self.source_rows))
        for source_id, seq in recorded.complete_sources.items():
            out.record_complete_source(source_id, seq)
        for source_id, seq in recorded.source_rows.items():
            out.record_source_row(source_id, seq)
        return out

    # -- the stored value --------------------------------------------------------------

    def to_value(self, owner_did: str, *, sessions: Mapping[str, int] | None = None) -> dict[str, Any]:
        """The stored value (`sessions` in its place, when given: ordering_text.py)."""
        if sessions is None:
            table = self.sessions
            keys = table.keys_table
            sessions = {keys.key(at): table.sequence_at(at) for at in table.in_key_order()}
        return {
            "schema": ORDERING_SCHEMA,
            "ownerDid": owner_did,
            "sessions": sessions,
            "completeSources": _sorted(self.complete_sources),
            "sourceRows": _sorted(self.source_rows),
        }

    def text(self, owner_did: str) -> str:
        """`values.dumps(self.to_value(owner_did))`, written from the table (ordering_text.py)."""
        return text_of(self, owner_did)

    @staticmethod
    def from_text(text: str, shared: Buffers | None = None) -> OrderingState:
        """The state of the stored value's fvj1 text, read without decoding its sessions
        into a dict first (when it is of the shape `text` writes). `shared`: the prior
        table's keys (prior_table.PriorRows.key_buffers), which its table uses."""
        read = read_entries(text, ORDERING_SCHEMA, shared)
        if read is None:
            return OrderingState.from_value(value_decoding.loads(text), shared=shared)
        return OrderingState.from_value(read[1], sessions=read[0])

    @staticmethod
    def from_value(
        value: Any, *, sessions: SessionSequences | None = None, shared: Buffers | None = None
    ) -> OrderingState:
        """The stored state; anything unreadable counts as no state (never newer), and so
        does a sequence beyond 2**63 - 1 (no store allocates one). `sessions`: the
        table read from the value's text, in place of its `sessions` field; `shared`:
        as `from_text`'s."""
        if not isinstance(value, Mapping) or value.get("schema") != ORDERING_SCHEMA:
            return OrderingState()
        if sessions is None:
            entries = _sequences(value.get("sessions"))
            sessions = SessionSequences(((k, v) for k, v in entries.items() if v <= _LARGEST), shared=shared)
        return OrderingState(sessions, _sequences(value.get("completeSources")), _sequences(value.get("sourceRows")))


def read_ordering(store: Any, space: str, cell: str, rows: Any) -> tuple[int, OrderingState]:
    """The ordering cell's version (0: none) and state; its sessions' keys that `rows` (a
    prior table, prior_table.PriorRows) holds are the table's (ordering_table.py)."""
    read = store.read_text(space, cell)  # its text scanned as it comes: no dict of every session first
    if read is None:
        return 0, OrderingState()
    key_buffers = getattr(rows, "key_buffers", None)
    shared = key_buffers() if key_buffers is not None else None
    entries = read_pieces(read[1], ORDERING_SCHEMA, shared)
    if entries is not None:
        return read[0], OrderingState.from_value(entries[1], sessions=entries[0])
    whole = store.read_text(space, cell)  # another shape: decoded whole, as before
    if whole is None:
        return 0, OrderingState()
    return whole[0], OrderingState.from_text("".join(whole[1]), shared)


def _sorted(sequences: dict[str, int]) -> dict[str, int]:
    return {key: sequences[key] for key in sorted(sequences)}


def _sequences(value: Any) -> dict[str, int]:
    """The valid entries."""
    if not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if type(k) is str and type(v) is int and v > 0}

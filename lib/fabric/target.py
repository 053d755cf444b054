"""FabricTarget: the connector's cells in one space (spec "Fabric connection and target").

    target = FabricTarget.open(store, space=space_did, owner=did)
    reader = FabricTarget.open(store, space=space_did, owner=did, read_only=True)
    sequence = target.begin_session_observation()      # before the first provider read
    with target.publication() as pub:                  # streaming, see publication.py
        ...
        pub.commit()
    target.publish_health({...})

Index commits are serialised by the publish lock, `store.lock(space, "publish")`: one
object per target (threads of this process take turns) that every process using the
store shares (processes take turns). A publication holds it only while it reads the
prior index and while it commits the new one. Receipt writes take the `receipts` lock
instead (receipt_cells.py): their cells are not the indexes', so a receipt never waits
for a session index commit. Opening only reads unless a root is missing; a read-only
target never writes and never waits for a writer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lib.fabric import session_index as idx
from lib.fabric.cell_id import (
    all_session_index_cause,
    cell_id,
    health_cause,
    receipts_cause,
    recent_session_index_cause,
)
from lib.fabric.index_store import IndexCells, read_complete_index
from lib.fabric.ordering import SEQUENCE_NAME
from lib.fabric.schemas import (
    COMMAND_RECEIPTS_SCHEMA,
    HEALTH_ARRAY_SCOPE,
    HEALTH_SCHEMA,
    parse_session_index,
    scope,
)
from lib.fabric.session_graph import GraphTarget
from lib.fabric.store import Labels, Store, Transaction
from lib.fabric.store_errors import ConflictError, PreconditionFailed
from lib.fabric.store_lock import DEFAULT_TIMEOUT_SECONDS, PUBLISH_LOCK, RECEIPTS_LOCK, OnWait
from lib.fabric.target_commands import CommandEntryPoints
from lib.fabric.target_errors import TargetError
from lib.git_context import GitContextResolver, GitObservation
from lib.session_key import session_key

if TYPE_CHECKING:
    # Imported where it is used: a target that only reads the index (an idle sync,
    # `sessions`) never loads the publication or the graph planner.
    from lib.fabric.publication import Publication

_OPEN_ATTEMPTS = 3
_ROOT_LISTS = frozenset({"sessions", "receipts"})  # a root's long lists, left undecoded at open


@dataclass(frozen=True)
class PublishedSession:
    """What a host needs to claim a published copy is current (retain predicate)."""

    key: str
    source_id: str
    native_session_id: str
    driver: str
    updated_at: str | None
    title: str | None
    archived: bool | None
    active: bool | None
    status: str
    started_as: str | None
    snapshot_hash: str

    def to_wire(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "sourceId": self.source_id,
            "nativeSessionId": self.native_session_id,
            "driver": self.driver,
            "updatedAt": self.updated_at,
            "title": self.title,
            "archived": self.archived,
            "active": self.active,
            "status": self.status,
            "startedAs": self.started_as,
            "snapshotHash": self.snapshot_hash,
        }


def published_sessions_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, PublishedSession]:
    """What a host needs of each complete-index row to claim a published copy current."""
    return {
        row["key"]: PublishedSession(
            key=row["key"],
            source_id=row["sourceId"],
            native_session_id=row["nativeSessionId"],
            driver=row["driver"],
            updated_at=row.get("updatedAt"),
            title=row.get("title"),
            archived=row.get("archived"),
            active=row.get("active"),
            status=row["status"],
            started_as=row.get("startedAs"),
            snapshot_hash=row["snapshotHash"],
        )
        for row in rows
    }


def _utc_now() -> datetime:
    return datetime.now(UTC)


class FabricTarget(CommandEntryPoints):
    def __init__(
        self,
        store: Store,
        *,
        space: str,
        owner: str,
        writer: str | None = None,
        store_url: str = "",
        clock: Callable[[], datetime] | None = None,
        resolver: GitContextResolver | None = None,
        lock_timeout: float = DEFAULT_TIMEOUT_SECONDS,
        on_lock_wait: OnWait | None = None,
        read_only: bool = False,
    ) -> None:
        # store_url is accepted for callers and unused: the store keys its own locks
        del store_url
        self.store = store
        self.read_only = read_only
        self.space = space
        self.owner = owner
        self.writer = writer or owner
        self.labels = Labels((owner,), (self.writer,))
        self.clock = clock or _utc_now
        self.resolver = resolver or GitContextResolver()
        self.cells = IndexCells.of(space, owner)
        self.graphs = GraphTarget(store, space, owner, self.writer, self.labels)
        self.lock = store.lock(space, PUBLISH_LOCK, timeout=lock_timeout, on_wait=on_lock_wait)
        self.receipts_lock = store.lock(space, RECEIPTS_LOCK, timeout=lock_timeout, on_wait=on_lock_wait)
        self.receipt_index_cache: Any = None  # receipt_cells.IndexCache, kept under receipts_lock
        self._init_command_helpers()

    # -- opening -----------------------------------------------------------------------

    @classmethod
    def open(cls, store: Store, *, read_only: bool = False, **options: Any) -> FabricTarget:
        """A target whose index, health and receipt roots exist with owner protection.

        The roots are read first; only when one is absent are the absent ones created,
        together in one transaction (each required absent). A present root whose labels
        are not the owner's (confidentiality) and this writer's (integrity) is rejected
        with `unprotected-root`, never adopted.

        `read_only=True` never writes (nor waits for a writer): absent roots read as
        empty (`published_sessions() == {}`), unprotected roots are still rejected, and
        the methods that write raise `read-only-target`.
        """
        target = cls(store, read_only=read_only, **options)
        target._initialise_roots()
        return target

    def _root_values(self) -> dict[str, Any]:
        now = self.clock()
        return {
            self.cells.recent: idx.empty_index_value(self.owner, "recent", now),
            self.cells.all: idx.empty_index_value(self.owner, "all", now),
            self.health_cell_id(): {"schema": HEALTH_SCHEMA, "ownerDid": self.owner},
            self.receipt_cell_id(): {
                "schema": COMMAND_RECEIPTS_SCHEMA,
                "updatedAt": idx.iso(now),
                "receipts": [],
            },
        }

    def _initialise_roots(self) -> None:
        # No publish lock: require_absent makes two concurrent opens safe (the loser's
        # commit conflicts and it checks again), and read-only commands never wait for
        # a running publication. Reading the roots takes no write lock; only a missing
        # root opens a write transaction.
        for attempt in range(_OPEN_ATTEMPTS):
            try:
                with self.store.transaction(self.space, self.writer) as tx:
                    missing = self._missing_roots(tx)
                    if not missing or self.read_only:
                        return
                    for cell, initial in missing.items():
                        tx.require_absent(cell)
                        tx.write(cell, initial, self.labels)
                    tx.commit()
                return
            except (ConflictError, PreconditionFailed):
                if attempt == _OPEN_ATTEMPTS - 1:
                    raise

    def _missing_roots(self, tx: Transaction) -> dict[str, Any]:
        """The initial values of the absent roots; raises for an unprotected one. Each
        root's version joins the transaction's read set (a root written meanwhile fails
        its commit), and its labels are read with its lists left undecoded: decoding the
        index roots' row links only to see their labels held about 30 MB at once at
        25,000 sessions, a listing idle sync's peak (issue 14 goal 4)."""
        initial_values = self._root_values()
        for cell in initial_values:
            tx.observe(cell)
        found = dict(self.store.iter_many(self.space, list(initial_values), keep_fields=_ROOT_LISTS))
        missing = {}
        for cell, initial in initial_values.items():
            document = found.get(cell)
            if document is None:
                missing[cell] = initial
            elif not self._protected(document.labels):
                raise TargetError(
                    "unprotected-root",
                    f"root cell {cell} exists without the owner's protection "
                    f"(confidentiality {list(document.labels.confidentiality)}, "
                    f"integrity {list(document.labels.integrity)}); it is not adopted",
                )
        return missing

    def _writable(self, action: str) -> None:
        if self.read_only:
            raise TargetError(
                "read-only-target",
                f"this target was opened read-only and cannot {action}; open it without "
                f"read_only to write",
            )

    def _protected(self, labels: Labels) -> bool:
        return (
            set(labels.confidentiality) == {self.owner}
            and self.writer in labels.integrity
            and set(labels.integrity) <= {self.owner, self.writer}
        )

    # -- cell identities ---------------------------------------------------------------

    def recent_index_id(self) -> str:
        return cell_id(recent_session_index_cause(self.space, self.owner))

    def all_index_id(self) -> str:
        return cell_id(all_session_index_cause(self.space, self.owner))

    def health_cell_id(self) -> str:
        return cell_id(health_cause(self.space, self.owner))

    def receipt_cell_id(self) -> str:
        """The receipt index cell ID (without any link prefix)."""
        return cell_id(receipts_cause(self.space, self.owner))

    # -- orchestration -----------------------------------------------------------------

    def begin_session_observation(self) -> int:
        """The ordering value a full collection records before its first provider read."""
        self._writable("allocate an observation sequence")
        return self.store.next_sequence(self.space, SEQUENCE_NAME)

    def observation_origin(self) -> str:
        """Where this target's observation sequences come from (the store and the
        space): a sequence means nothing in another store or space."""
        return f"{self.store.store_id()} {self.space}"

    def published_sessions(self) -> dict[str, PublishedSession]:
        """Every session of the complete index, by key, without reading transcripts."""
        value, _document = read_complete_index(self.graphs, self.cells)
        if value is None:
            return {}
        parsed = parse_session_index(value, bucket="all")
        return published_sessions_of(parsed.sessions)

    def publication(
        self,
        *,
        git: GitObservation | None = None,
        preserve_untouched_status: bool = False,
        checkout_directories: Sequence[str] | None = None,
        accept_deletions: bool = False,
    ) -> Publication:
        """A streaming publication. It takes the publish lock to commit, and to read the
        prior index unless the one this process committed is still the stored one
        (index_store.cached_prior), waiting up to the lock's timeout each time, never in
        between.

        `git`: the run's Git observation (shared with its reads, so a directory is
        resolved once); by default a new one. `checkout_directories`: None keeps the
        prior discovery checkout rows; a list (even empty) is a complete filesystem
        scan and replaces them. `accept_deletions`: an inventory that would delete
        every session of its source, or most of many, deletes them anyway (otherwise it
        is suspect: nothing is deleted, see publication_resolve.DeletionGuard).
        """
        self._writable("publish")
        from lib.fabric.publication import Publication
        from lib.fabric.publication_resolve import DeletionGuard

        return Publication(
            graphs=self.graphs,
            cells=self.cells,
            git=git or self.resolver.begin_observation(),
            clock=self.clock,
            allocate_sequence=self.begin_session_observation,
            preserve_untouched_status=preserve_untouched_status,
            checkout_directories=checkout_directories,
            lock=self.lock,
            deletions=DeletionGuard(accept=accept_deletions),
        )

    def publish_health(self, value: Mapping[str, Any]) -> None:
        """Replace the health record with a host-defined value under the health schema.

        Under the publish lock: health and index commits take turns (docs/command-path.md,
        "Locks and queues for writes")."""
        self._writable("publish health")
        from lib.fabric.graph_commit import commit_graph
        from lib.fabric.graph_plan import plan_graph

        record = {**dict(value), "schema": HEALTH_SCHEMA, "ownerDid": self.owner}
        graph = plan_graph(
            health_cause(self.space, self.owner),
            record,
            scope(self.space, self.owner, HEALTH_ARRAY_SCOPE),
        )
        with self.lock:
            commit_graph(self.store, self.space, self.writer, self.labels, graph)

    def session_key(self, source_id: str, native_session_id: str) -> str:
        return session_key(source_id, native_session_id)

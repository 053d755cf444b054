"""Targeted refreshes: read sessions and publish them, leaving every other row as it is.

The observation sequence is allocated before the reads, so a full collection that began
earlier and finishes later cannot overwrite what the refresh publishes. A host refreshes
a session after running a command in it. `refresh_sessions` refreshes several sessions
(of any sources) in one publication: one index commit for all of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from lib.drivers.base import AgentDriver
from lib.fabric.publication_results import PublishedOutcome
from lib.fabric.target import FabricTarget
from lib.git_context import GitObservation
from lib.pipeline.prepared_reads import PreparedReads
from lib.prepare import PreparedSession, prepare_session
from lib.reconcile import SessionReads
from lib.session_key import normalize_key_parts, session_key
from lib.types import NativeSessionSnapshot, SessionSummary

if TYPE_CHECKING:
    from lib.fabric.publication import Publication


def refresh_session(
    target: FabricTarget, driver: AgentDriver, native_session_id: str, *, git: GitObservation | None = None
) -> PublishedOutcome:
    """Read and publish one session without changing untouched statuses."""
    return refresh_sessions(target, [(driver, native_session_id)], git=git)[0]


def refresh_sessions(
    target: FabricTarget,
    sessions: Iterable[tuple[AgentDriver, str]],
    *,
    git: GitObservation | None = None,
    kept: PreparedReads | None = None,
) -> list[PublishedOutcome]:
    """Read and publish each (driver, native session id), in one publication, without
    changing untouched statuses; one outcome per session, in order. A failed read is
    published as the session's error (its row turns partial), never raised. With
    `kept`, a session read unchanged since its last preparation there is not prepared
    again (lib/pipeline/prepared_reads.py)."""
    sessions = list(sessions)
    git = git or target.resolver.begin_observation()
    sequence = target.begin_session_observation()
    outcomes: list[PublishedOutcome] = []
    with target.publication(git=git, preserve_untouched_status=True) as pub:
        begun: set[str] = set()
        for driver, native_session_id in sessions:
            source = driver.source
            if source.id not in begun:
                pub.begin_source(source, sequence)
                begun.add(source.id)
            reads = SessionReads(source.id, lambda driver=driver: driver)
            taken = reads.take(SessionSummary(native_session_id=native_session_id))
            if taken.snapshot is not None:
                snapshot = taken.snapshot
                snapshot.summary = git.enrich(snapshot.summary)
                prepared = _prepared(pub, source.id, source.driver, snapshot, kept)
                outcomes.append(pub.add_prepared(prepared))
            else:
                assert taken.error is not None
                outcome = pub.add_error(source.id, native_session_id, taken.error.code, taken.error.message)
                assert outcome is not None
                outcomes.append(outcome)
        for source_id in begun:
            pub.end_source(None, source_id)
        pub.commit()
    return outcomes


def _prepared(
    pub: Publication, source_id: str, driver: str | None, snapshot: NativeSessionSnapshot, kept: PreparedReads | None
) -> PreparedSession:
    """The snapshot prepared, or the kept preparation of the same snapshot when the row
    it is published against has its hash (so the publication never needs its chunks)."""
    if kept is None or driver is None:
        return prepare_session(source_id, snapshot, driver=driver, consume=True)
    key = session_key(*normalize_key_parts(source_id, snapshot.summary.native_session_id))
    digest = kept.digest(snapshot)
    reused = kept.get(key, digest)
    prior = pub.prior.rows.get(key)
    if reused is not None and prior is not None and prior["snapshotHash"] == reused.snapshot_hash \
            and prior["driver"] == driver:
        return reused
    prepared = prepare_session(source_id, snapshot, driver=driver, consume=True)
    kept.put(key, digest, prepared)
    return prepared

"""Targeted refreshes: read sessions and publish them, leaving every other row as it is.

The observation sequence is allocated before the reads, so a full collection that began
earlier and finishes later cannot overwrite what the refresh publishes. A host refreshes
a session after running a command in it. `refresh_sessions` refreshes several sessions
(of any sources) in one publication: one index commit for all of them.
"""

from __future__ import annotations

from collections.abc import Iterable

from lib.drivers.base import AgentDriver
from lib.fabric.publication_results import PublishedOutcome
from lib.fabric.target import FabricTarget
from lib.git_context import GitObservation
from lib.prepare import prepare_session
from lib.reconcile import SessionReads
from lib.types import SessionSummary


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
) -> list[PublishedOutcome]:
    """Read and publish each (driver, native session id), in one publication, without
    changing untouched statuses; one outcome per session, in order. A failed read is
    published as the session's error (its row turns partial), never raised."""
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
                prepared = prepare_session(source.id, snapshot, driver=source.driver, consume=True)
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

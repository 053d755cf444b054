"""A targeted refresh: read one session and publish it, leaving every other row as it is.

The observation sequence is allocated before the read, so a full collection that began
earlier and finishes later cannot overwrite what the refresh publishes. A host refreshes
a session after running a command in it.
"""

from __future__ import annotations

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
    git = git or target.resolver.begin_observation()
    sequence = target.begin_session_observation()
    source = driver.source
    reads = SessionReads(source.id, lambda: driver)
    taken = reads.take(SessionSummary(native_session_id=native_session_id))
    prepared = None
    if taken.snapshot is not None:
        snapshot = taken.snapshot
        snapshot.summary = git.enrich(snapshot.summary)
        prepared = prepare_session(source.id, snapshot, driver=source.driver, consume=True)
    with target.publication(git=git, preserve_untouched_status=True) as pub:
        pub.begin_source(source, sequence)
        if prepared is not None:
            outcome = pub.add_prepared(prepared)
        else:
            assert taken.error is not None
            outcome = pub.add_error(source.id, native_session_id, taken.error.code, taken.error.message)
            assert outcome is not None
        pub.end_source(None, source.id)
        pub.commit()
    return outcome

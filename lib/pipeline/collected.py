"""Publishing materialised collections (the spec's `publish(collected)`): what
`collect_source` returns, prepared and published in one publication."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lib.fabric.target import FabricTarget
from lib.prepare import prepare_session
from lib.reconcile import CollectedSource


def publish_collected(
    target: FabricTarget,
    collected: Iterable[CollectedSource],
    *,
    observation_sequence: int | None = None,
    preserve_untouched_status: bool = False,
    checkout_directories: Sequence[str] | None = None,
) -> int:
    """Publish every collected source; returns the number of live sessions."""
    git = target.resolver.begin_observation()
    with target.publication(
        git=git,
        preserve_untouched_status=preserve_untouched_status,
        checkout_directories=checkout_directories,
    ) as pub:
        for source in collected:
            source_id = source.source.id
            pub.begin_source(source.source, observation_sequence)
            for snapshot in source.snapshots:
                snapshot = snapshot.model_copy(update={"summary": git.enrich(snapshot.summary)})
                pub.add_prepared(prepare_session(source_id, snapshot, driver=source.source.driver))
            for summary in source.retained:
                pub.add_retained(source_id, git.enrich(summary))
            for error in source.outcome.errors:
                if error.stage == "read":
                    pub.add_error(source_id, error.native_session_id, error.code, error.message)
            pub.end_source(source.outcome.to_wire())
        return pub.commit().session_count

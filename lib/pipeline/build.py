"""The stages of a run, built over one Workspace, one driver pool and one Git scope.

    drivers = DriverPool(workspace.collection_driver)
    stage = publish_stage(workspace, drivers)       # publish(prepare(read(...)))

Each later stage wraps the earlier ones, so it accepts every earlier stage's records.
Git context is resolved once per directory per run: the read stage and the
publication share one observation. With `checkoutRoots` configured, the publication
scans them once (before it opens, so a failed scan commits nothing) and replaces the
discovery checkout rows with what it found.
"""

from __future__ import annotations

from collections.abc import Callable

from lib.checkout_discovery import discover_checkouts
from lib.git_context import GitObservation
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.prepare_stage import PrepareStage
from lib.pipeline.publish_stage import PublicationSlot, PublishStage
from lib.pipeline.read_ahead import ReadAhead
from lib.pipeline.read_stage import ReadStage
from lib.pipeline.retain import RetainRule
from lib.reconcile import SignalSource
from lib.workspace import Workspace


def read_stage(
    workspace: Workspace,
    drivers: DriverPool,
    *,
    full: bool = False,
    git: GitObservation | None = None,
    slot: PublicationSlot | None = None,
    signal: SignalSource = None,
    read_ahead: ReadAhead | None = None,
) -> ReadStage:
    """Retains (does not read) sessions whose published copy is current, unless `full`.
    With a publication `slot` the copies are the ones it read under the publish lock;
    without, they are read from the store (nothing is created when there is none)."""
    retain = None
    if not full:
        published = slot.published_sessions if slot is not None else workspace.published_sessions
        retain = RetainRule(published, workspace.driver_kind)
    git = git or workspace.git_resolver().begin_observation()
    return ReadStage(drivers, git, retain=retain, signal=signal, read_ahead=read_ahead)


def prepare_stage(workspace: Workspace, drivers: DriverPool, *, full: bool = False,
                  signal: SignalSource = None) -> PrepareStage:
    return PrepareStage(read_stage(workspace, drivers, full=full, signal=signal))


def publish_stage(
    workspace: Workspace,
    drivers: DriverPool,
    *,
    full: bool = False,
    preserve_untouched_status: bool = False,
    accept_deletions: bool = False,
    signal: SignalSource = None,
    read_ahead: ReadAhead | None = None,
    after_reads: Callable[[], None] | None = None,
) -> PublishStage:
    git = workspace.git_resolver().begin_observation()
    slot = PublicationSlot(workspace.open_target(), git, preserve_untouched_status=preserve_untouched_status,
                           accept_deletions=accept_deletions, discover=checkout_scan(workspace))
    read = read_stage(workspace, drivers, full=full, git=git, slot=slot, signal=signal, read_ahead=read_ahead)
    return PublishStage(PrepareStage(read), slot, workspace.describe_source, after_reads=after_reads)


def checkout_scan(workspace: Workspace) -> Callable[[], list[str]] | None:
    """The run's checkout discovery over the configured roots; None (keep the prior
    discovery rows) when no root is configured."""
    roots = workspace.config.checkout_roots
    if not roots:
        return None
    return lambda: discover_checkouts(roots)

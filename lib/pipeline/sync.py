"""Sync: the whole collection of some sources, published, in one process.

The composed pipe's stages (list, read, prepare, publish) chained in one process, one
session at a time, which is why `agentctl sync` and the pipe publish the same state.
"""

from __future__ import annotations

from collections.abc import Iterator

from lib.drivers.base import DriverError
from lib.fabric.target import FabricTarget
from lib.pipeline.build import publish_stage
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.listing import list_source
from lib.pipeline.records import Item, RecordSink, error_record
from lib.pipeline.runner import Progress, run_stage
from lib.reconcile import SignalSource
from lib.workspace import Workspace


def run_sync(
    workspace: Workspace,
    source_ids: list[str],
    sink: RecordSink,
    *,
    drivers: DriverPool,
    full: bool = False,
    accept_deletions: bool = False,
    signal: SignalSource = None,
    progress: Progress | None = None,
) -> RecordSink:
    """Collect and publish `source_ids`; every record goes to `sink`, the last one the
    `publication` record."""
    stage = publish_stage(workspace, drivers, full=full, accept_deletions=accept_deletions, signal=signal)
    inventory = inventory_records(workspace.open_target(), drivers, source_ids, signal=signal)
    return run_stage(stage, inventory, sink, progress=progress, description="sync")


def inventory_records(
    target: FabricTarget, drivers: DriverPool, source_ids: list[str], *, signal: SignalSource = None
) -> Iterator[Item]:
    """Every source's inventory records, in order; a source that cannot start is one
    error record (stage `start`), and the publication keeps its sessions."""
    for source_id in source_ids:
        driver = drivers.get(source_id)
        if isinstance(driver, DriverError):
            yield error_record("start", driver.code, f"source {source_id} cannot start: {driver.message}",
                               source_id=source_id)
            continue
        # The observation sequence is allocated before the first provider call.
        yield from list_source(
            driver, target.begin_session_observation(), target.observation_origin(), signal=signal
        )

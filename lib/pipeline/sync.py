"""Sync: the whole collection of some sources, published, in one process.

The composed pipe's stages (list, read, prepare, publish) chained in one process, one
session at a time (the next one read ahead, see read_ahead.py), which is why `agentctl
sync` and the pipe publish the same state. A source whose home is unchanged is not
listed at all (unchanged_sources.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from lib.drivers.base import DriverError
from lib.pipeline.records import Item, RecordSink, data_of, error_record, kind_of
from lib.pipeline.unchanged_sources import UnchangedSources

if TYPE_CHECKING:  # what only a sync that lists needs is imported when it lists
    from lib.fabric.target import FabricTarget
    from lib.pipeline.driver_pool import DriverPool
    from lib.pipeline.idle_answer import Before, IdleAnswerKeeper
    from lib.pipeline.runner import Progress
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
    close_drivers: bool = False,
    idle_answer: IdleAnswerKeeper | None = None,
    start_early: bool = False,
) -> RecordSink:
    """Collect and publish `source_ids`; every record goes to `sink`, the last one the
    `publication` record. With `close_drivers` the providers are stopped before their
    homes are fingerprinted again (Codex checkpoints its database as it exits, so a
    fingerprint taken while it runs would not be the one the next sync sees): asked to
    stop once every read is answered, so their exit overlaps the index commit, and
    waited for before the fingerprints.

    With `idle_answer`, an idle answer (this run's, or the one the next run will give
    after this run's publication) is kept for the fast path (lib/pipeline/idle_answer.py).

    With `start_early`, the provider of every source that will be listed starts as soon as
    its fingerprint has been taken (`drivers.start_early`), so its start-up overlaps the
    stages' imports and set-up instead of following them."""
    target = workspace.open_target()
    unchanged = UnchangedSources(workspace, target, full=full)
    before = None
    if workspace.config.checkout_roots:
        idle = None  # such a run scans checkouts: never idle
    elif idle_answer is None or full:
        idle = unchanged.idle_publication(source_ids)
    elif all(unchanged.check(source_id).unchanged for source_id in source_ids):
        # Every source unchanged: decided again between the observations the answer is
        # kept with (the checks above came before them). A source that changed needs
        # neither: it is listed, and observing its home again (a walk of every rollout)
        # would only delay its listing.
        fresh, before, idle = observed_decision(workspace, target, source_ids, idle_answer)
        if idle is not None:  # the records are the decision's; a run that lists keeps the first
            unchanged = fresh  # checks (a fingerprint may be the one taken before Codex started)
    else:
        idle = None
    if idle is not None:  # every source unchanged: nothing to publish, nothing to start
        from lib.drivers import codex_early
        from lib.pipeline.idle_answer import idle_records

        codex_early.discard()  # a Codex the fast path started is not needed after all

        records = idle_records(unchanged, source_ids, idle)
        for record in records:
            sink.put(record)
        if idle_answer is not None:
            idle_answer.keep(before, unchanged, records)
        return sink
    sequences: dict[str, int] = {}
    if start_early:  # each fingerprint is taken (check) before its provider starts
        listed = [source_id for source_id in source_ids if not unchanged.check(source_id).unchanged]
        sequences = early_sequences(target, source_ids, listed)
        drivers.start_early(listed, list_ahead=sequences)
    # the stages, the read-ahead and the runner: not imported by an idle sync
    from lib.pipeline.build import publish_stage
    from lib.pipeline.read_ahead import ReadAhead
    from lib.pipeline.runner import run_stage

    ahead = ReadAhead()  # the next session is read while this one is published
    # every read answered: the providers exit beside the index commit (still before the
    # homes are fingerprinted again below: `close` waits for them)
    stage = publish_stage(workspace, drivers, full=full, accept_deletions=accept_deletions, signal=signal,
                          read_ahead=ahead, after_reads=drivers.close_in_background if close_drivers else None)
    inventory = ahead.feed(inventory_records(target, drivers, source_ids, signal=signal, unchanged=unchanged,
                                             sequences=sequences))
    watched = PublicationWatch(sink)
    try:
        run_stage(stage, inventory, watched, progress=progress, description="sync")
    finally:
        from lib.drivers import codex_early

        codex_early.discard()  # one the fast path started and no driver took (another launch)
        if close_drivers:
            drivers.close()
    unchanged.published(watched.publication)
    if idle_answer is not None:
        keep_next_idle_answer(workspace, target, source_ids, idle_answer, walked=unchanged.trusted)
    return sink


def keep_next_idle_answer(
    workspace: Workspace, target: FabricTarget, source_ids: list[str], idle_answer: IdleAnswerKeeper, *,
    walked: dict[str, Any] | None = None,
) -> None:
    """After a publication: decide, as the next run will, whether it is idle, and keep
    that answer, so the first idle sync after a publication is answered fast too.
    `walked`: home digests taken since the listing ended (the trust check's, by source
    id), the first observation's for those homes: each is walked once less."""
    from lib.pipeline.idle_answer import idle_records

    try:
        # no kept publication (a source was not kept): the next run lists; nothing to observe
        unkept = workspace.config.checkout_roots or UnchangedSources(workspace, target).book.load_publication() is None
        fresh, before, idle = (None, None, None) if unkept else observed_decision(
            workspace, target, source_ids, idle_answer, observed_only=True, walked=walked)
    except Exception:  # noqa: BLE001 - what the next run decides is its own; this only keeps a cache
        idle = None
    if idle is None:
        idle_answer.forget()
        return
    idle_answer.keep(before, fresh, idle_records(fresh, source_ids, idle))


def observed_decision(
    workspace: Workspace, target: FabricTarget, source_ids: list[str], idle_answer: IdleAnswerKeeper, *,
    observed_only: bool = False, walked: dict[str, Any] | None = None,
) -> tuple[UnchangedSources, Before | None, dict[str, Any] | None]:
    """The idle decision on a fresh UnchangedSources, after the inputs an idle answer is
    kept with are observed (`before`); its fingerprints are the home digests that
    observation took, so each home is walked once, not twice. `observed_only`: no
    decision (None) when the inputs cannot be observed."""
    from lib.drivers import codex_early

    fresh = UnchangedSources(workspace, target)
    taken: dict[str, Any] = {}
    before = idle_answer.before(fresh, taken, walked)
    if before is None and observed_only:
        return fresh, None, None
    codex_early.lend_fingerprints(dict(taken.values()))
    try:
        return fresh, before, fresh.idle_publication(source_ids)
    finally:
        codex_early.end_lending()  # a digest not taken must not serve a later fingerprint


def early_sequences(target: FabricTarget, source_ids: list[str], listed: list[str]) -> dict[str, int]:
    """The observation sequences of the listed sources that lead `source_ids` (up to the
    first unchanged one), allocated now, in order, so their providers may list from the
    moment they start (every listing still follows its sequence). A source after an
    unchanged one allocates when it is listed, as before: the unchanged one allocates
    its own first, so every source gets the number it always got. A source whose early
    listing (the idle fast path's, lib/pipeline/idle_early_start.py) follows a sequence
    allocated for it lists from that one, allocated before its listing too."""
    from lib.drivers import codex_early

    sequences: dict[str, int] = {}
    for source_id in source_ids:
        if source_id not in listed:
            break
        early = codex_early.take_sequence(source_id, lambda: target.observation_origin())
        sequences[source_id] = target.begin_session_observation() if early is None else early
    return sequences


def inventory_records(
    target: FabricTarget, drivers: DriverPool, source_ids: list[str], *, signal: SignalSource = None,
    unchanged: UnchangedSources | None = None, sequences: dict[str, int] | None = None,
) -> Iterator[Item]:
    """Every source's inventory records, in order; a source that cannot start is one
    error record (stage `start`), and the publication keeps its sessions. A source
    whose home is unchanged since its last complete sync is neither started nor listed
    (lib/pipeline/unchanged_sources.py). `sequences`: observation sequences allocated
    before the listing began (`early_sequences`)."""
    from lib.pipeline.listing import list_source

    for source_id in source_ids:
        if unchanged is not None:
            check = unchanged.check(source_id)  # before the driver starts: a change from now on shows
            if check.unchanged:
                yield from unchanged.unchanged_records(check)
                continue
        driver = drivers.get(source_id)
        if isinstance(driver, DriverError):
            yield error_record("start", driver.code, f"source {source_id} cannot start: {driver.message}",
                               source_id=source_id)
            continue
        # The observation sequence is allocated before the first provider call.
        sequence = (sequences or {}).get(source_id)
        yield from list_source(
            driver, target.begin_session_observation() if sequence is None else sequence,
            target.observation_origin(), signal=signal
        )


class PublicationWatch(RecordSink):
    """Passes every record on to `inner` and keeps the `publication` record."""

    def __init__(self, inner: RecordSink) -> None:
        super().__init__()
        self.inner = inner
        self.publication: dict | None = None

    def put(self, item: Item) -> None:
        if kind_of(item) == "publication":
            self.publication = data_of(item)
        self.inner.put(item)

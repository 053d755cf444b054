"""Idle resync: a source whose provider home has not changed is not listed at all.

After a complete, published collection of a source, `sync` keeps the fingerprint its
driver took of the provider's home just before listing (lib/drivers/base.py,
`inventory_fingerprint`) in the state directory, keyed by store, space and source:

    <state dir>/inventory-fingerprints/<sha256 of store, space and source>.json   (0600)

The next `sync` takes the fingerprint again before it starts anything. When it equals
the kept one, the source's configuration is the same, and the store is still at the
generation that publication (or a later such check) left, nothing the provider lists
can have changed and no one else has published since: the source is not started, not
listed and not read; its published rows stay as they are (a targeted outcome, marked
`inventoryUnchanged`), and it counts as complete.

When every source of a run is unchanged (and no `checkoutRoots` are configured, whose
scan could change the checkout rows), nothing is published at all: the run writes each
source's records and the `publication` record kept from the commit that produced the
store's current generation, marked `"idle": true` (`written`, `unchanged` and
`cellsWritten` 0). It then neither reads the index nor takes the publish lock.

A fingerprint is kept only when it can be trusted: the collection was complete and
published, the home did not change while it was listed (taken again after the
publication, it is the same), and no file in it changed within UNSURE_SECONDS before it
was taken (a write in the same timestamp tick could go unseen). Anything else removes
it, so the next sync lists. `sync --full` never skips.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lib.drivers.base import InventoryFingerprint
from lib.drivers.registry import inventory_fingerprint
from lib.errors import CodedError
from lib.fabric.target import FabricTarget
from lib.pipeline import idle_inputs
from lib.pipeline.records import source_record
from lib.reconcile import CollectionOutcome
from lib.workspace import Workspace

UNSURE_SECONDS = 2.0
DIRECTORY = idle_inputs.DIRECTORY  # beside the fingerprints: the kept idle answer (idle_inputs.py)
FORMAT = 1


@dataclass
class SourceCheck:
    """One source's fingerprint before listing, and whether it may be skipped."""

    source_id: str
    fingerprint: InventoryFingerprint | None
    config_hash: str
    unchanged: bool
    provider_version: str | None = None


class FingerprintBook:
    """The kept fingerprints of one store and space, one small private file each."""

    def __init__(self, directory: Path, store_origin: str) -> None:
        self.directory = directory
        self._origin = store_origin

    def path(self, source_id: str) -> Path:
        name = hashlib.sha256(f"{self._origin}\0{source_id}".encode()).hexdigest()[:40]
        return self.directory / f"{name}.json"

    def publication_path(self) -> Path:
        name = hashlib.sha256(f"{self._origin}\0publication".encode()).hexdigest()[:40]
        return self.directory / f"{name}.publication.json"

    def load(self, source_id: str) -> dict[str, Any] | None:
        return self._load(self.path(source_id))

    def load_publication(self) -> dict[str, Any] | None:
        return self._load(self.publication_path())

    def _load(self, path: Path) -> dict[str, Any] | None:
        try:
            with path.open("r", encoding="utf-8") as handle:
                value = json.load(handle)
        except (OSError, ValueError):
            return None  # missing or damaged: list, and keep a good one afterwards
        if not isinstance(value, dict) or value.get("format") != FORMAT or value.get("storeOrigin") != self._origin:
            return None
        return value

    def save(self, source_id: str, value: dict[str, Any]) -> None:
        self._save(self.path(source_id), value)

    def save_publication(self, value: dict[str, Any]) -> None:
        self._save(self.publication_path(), value)

    def _save(self, path: Path, value: dict[str, Any]) -> None:
        """Written whole or not at all: a new private file renamed over the old one."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({**value, "format": FORMAT, "storeOrigin": self._origin}, handle, sort_keys=True)
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def forget(self, source_id: str) -> None:
        self.path(source_id).unlink(missing_ok=True)

    def forget_publication(self) -> None:
        self.publication_path().unlink(missing_ok=True)


class UnchangedSources:
    """The idle-resync decisions of one `sync` run."""

    def __init__(self, workspace: Workspace, target: FabricTarget, *, full: bool = False) -> None:
        self._workspace = workspace
        self._target = target
        self._full = full
        # the digests the trust check took after the listing, by source id: the next run's
        # idle answer observes its homes with them (lib/pipeline/sync.py keep_next_idle_answer)
        self.trusted: dict[str, InventoryFingerprint] = {}
        self._book: FingerprintBook | None = None
        self._generation: int | None = None
        self.checks: dict[str, SourceCheck] = {}

    @property
    def target(self) -> FabricTarget:
        return self._target

    @property
    def book(self) -> FingerprintBook:
        if self._book is None:
            directory = self._workspace.private_state_path() / DIRECTORY
            self._book = FingerprintBook(directory, self._target.observation_origin())
        return self._book

    def idle_publication(self, source_ids: list[str]) -> dict[str, Any] | None:
        """When every source is unchanged, the `publication` record of the generation the
        store is still at (kept when it was committed): nothing need be published at
        all. None otherwise (then each unchanged source is still skipped)."""
        if not all(self.check(source_id).unchanged for source_id in source_ids):
            return None
        kept = self.book.load_publication()
        if kept is None or kept.get("generation") != self.published_generation():
            return None
        record = {key: value for key, value in kept.items() if key not in ("format", "storeOrigin")}
        record.update(written=0, unchanged=0, cellsWritten=0, idle=True)
        return record

    def check(self, source_id: str) -> SourceCheck:
        """Take the source's fingerprint (before anything starts) and compare it; once per
        source and run."""
        if source_id in self.checks:
            return self.checks[source_id]
        config = self._workspace.source_config(source_id)
        config_hash = hashlib.sha256(config.model_dump_json().encode()).hexdigest()
        try:
            fingerprint = inventory_fingerprint(config)
        except (CodedError, OSError):
            fingerprint = None  # the listing reports what is wrong
        check = SourceCheck(source_id, fingerprint, config_hash, unchanged=False)
        kept = self.book.load(source_id) if fingerprint is not None else None
        if (
            not self._full
            and fingerprint is not None
            and kept is not None
            and kept.get("digest") == fingerprint.digest
            and kept.get("configHash") == config_hash
            and kept.get("generation") == self.published_generation()
        ):
            check.unchanged = True
            check.provider_version = kept.get("providerVersion")
        self.checks[source_id] = check
        return check

    def unchanged_records(self, check: SourceCheck, *, observed: bool = True) -> list[dict[str, Any]]:
        """What an unchanged source contributes: its source record (observed from now,
        unless nothing is published) and an outcome that keeps its published rows as
        they are."""
        descriptor = self._workspace.describe_source(check.source_id)
        descriptor.provider_version = check.provider_version
        outcome = CollectionOutcome(source_id=check.source_id, complete=True, inventory_complete=True,
                                    targeted=True).to_wire()
        sequence = self._target.begin_session_observation() if observed else None
        return [
            source_record(descriptor, sequence, self._target.observation_origin() if observed else None),
            {"record": "outcome", "stage": "read", **outcome, "inventoryUnchanged": True},
        ]

    def published(self, publication: dict[str, Any] | None) -> None:
        """After the run: keep each checked source's fingerprint when its collection was
        complete and published and the fingerprint is trustworthy; forget it otherwise."""
        rows = {row.get("sourceId"): row for row in (publication or {}).get("sources") or []}
        if publication is not None and publication.get("idle"):
            return  # nothing was published: what is kept still holds
        kept_all = publication is not None
        for source_id, check in self.checks.items():
            row = rows.get(source_id)
            if publication is None or row is None or not (row.get("complete") and row.get("inventoryComplete")):
                self._forget(source_id)
                kept_all = False
                continue
            if check.fingerprint is None or not self._trustworthy(check):
                self._forget(source_id)
                kept_all = False
                continue
            try:
                self.book.save(source_id, {
                    "sourceId": source_id,
                    "digest": check.fingerprint.digest,
                    "files": check.fingerprint.files,
                    "configHash": check.config_hash,
                    "generation": publication.get("generation"),
                    "providerVersion": row.get("providerVersion"),
                })
            except OSError:  # a disk that is full: the next sync lists, as without one
                self._forget(source_id)
                kept_all = False
        try:
            if kept_all and publication is not None:
                self.book.save_publication(publication)  # what an idle sync of this generation reports
            else:
                self.book.forget_publication()
        except OSError:
            pass  # without it an idle sync publishes (a skipped source is still not listed)

    def published_generation(self) -> int | None:
        """The store's index generation now (one document read, once per run)."""
        if self._generation is None:
            document = self._target.store.read(self._target.space, self._target.cells.recent)
            value = document.value if document is not None else None
            generation = value.get("generation") if isinstance(value, dict) else None
            self._generation = generation if type(generation) is int else 0
        return self._generation

    def _trustworthy(self, check: SourceCheck) -> bool:
        if check.unchanged:
            return True  # checked equal to one that was trusted; nothing was started
        before = check.fingerprint
        assert before is not None
        if not before.settled(int(UNSURE_SECONDS * 1e9)):
            return False
        config = self._workspace.source_config(check.source_id)
        try:
            after = inventory_fingerprint(config)
        except (CodedError, OSError):
            return False
        if after is None or after.digest != before.digest:
            return False
        self.trusted[check.source_id] = after
        return True

    def _forget(self, source_id: str) -> None:
        try:
            self.book.forget(source_id)
        except OSError:
            pass  # our own 0700 directory: this does not fail short of a broken disk

"""Keeping the idle answer: the normal path's side of lib/pipeline/idle_inputs.py.

When a `sync` run answers idle (every source unchanged), or publishes in a way the next
run will answer idle, it keeps the records that answer prints with the inputs it
depends on, observed just before and just after the decision; when the two differ, or
anything the decision used does not match what was observed (the configuration parsed
from the observed bytes, the DID of the observed identity file, the sources, the home
fingerprints, the roots' labels), nothing is kept and the fast path stays off until a
later run keeps one. Keeping never changes what the run prints or exits with.
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING, Any

from lib.pipeline import idle_inputs
from lib.pipeline.records import to_json_line

if TYPE_CHECKING:
    from lib.pipeline.unchanged_sources import UnchangedSources
    from lib.workspace import Workspace

Before = tuple[dict[str, Any], dict[str, Any]]


class IdleAnswerKeeper:
    """One run's keeping of its idle answer, for `agentctl sync NAMES` exactly (the
    command line the fast path recognises: no option that changes where or what)."""

    def __init__(self, workspace: Workspace, names: list[str], source_ids: list[str]) -> None:
        self._workspace = workspace
        self._names = list(names)
        self._source_ids = list(source_ids)

    def before(self, unchanged: UnchangedSources, taken: dict[str, Any] | None = None,
               walked: dict[str, Any] | None = None) -> Before | None:
        """The plan and the inputs as they are before the decision; None when this run's
        answer cannot be kept (another store kind, checkout roots, a source the fast path
        cannot fingerprint). `taken`, `walked`: see `idle_inputs.observe`."""
        try:
            plan = self._plan(unchanged)
            return None if plan is None else (plan, idle_inputs.observe(plan, os.environ, taken, walked))
        except (idle_inputs.Undecided, OSError, ValueError):
            return None

    def keep(self, before: Before | None, unchanged: UnchangedSources, records: list[dict[str, Any]]) -> None:
        """Keep `records`, the idle answer just decided, when nothing it depends on moved."""
        state_dir = str(self._workspace.state_path)
        try:
            if before is None or not self._consistent(before, unchanged):
                idle_inputs.forget_answer(state_dir)
                return
            plan, inputs = before
            if idle_inputs.observe(plan, os.environ) != inputs:
                idle_inputs.forget_answer(state_dir)
                return
            idle_inputs.save_answer(state_dir, {"request": self._names, "plan": plan, "inputs": inputs,
                                                "lines": [to_json_line(record) for record in records]})
        except Exception:  # noqa: BLE001 - a cache must never fail the sync: without it the next run decides
            try:
                idle_inputs.forget_answer(state_dir)
            except OSError:
                pass

    def forget(self) -> None:
        try:
            idle_inputs.forget_answer(str(self._workspace.state_path))
        except OSError:
            pass

    # -- what is kept ----------------------------------------------------------------------

    def _plan(self, unchanged: UnchangedSources) -> dict[str, Any] | None:
        from lib.config import builtin_source_homes, default_config_path
        from lib.drivers.codex_fingerprint import fingerprint_plan
        from lib.fabric.cell_keys import key
        from lib.fabric.store_url import MEMORY, sqlite_path

        workspace = self._workspace
        config = workspace.config
        if config.checkout_roots:
            return None  # such a run scans checkouts: never idle (lib/pipeline/sync.py)
        path = sqlite_path(workspace.resolved_store_url)
        if path is None or path == MEMORY:
            return None  # PostgreSQL: the fast path reads SQLite files only
        target = unchanged.target
        sources = {}
        for source_id in self._source_ids:
            source = workspace.source_config(source_id)
            recipe = fingerprint_plan(source, os.environ) if source.driver == "codex-app-server" else None
            if recipe is None:
                return None
            sources[source_id] = {"kind": "codex-home", **recipe}
        roots = []
        for cell in (target.cells.recent, target.cells.all, target.health_cell_id(), target.receipt_cell_id()):
            stored = key(cell)
            roots.append(["b", stored.hex()] if isinstance(stored, bytes) else ["s", stored])
        book = unchanged.book
        return {
            "stateDir": str(workspace.private_state_path()),
            "configPath": str(workspace.config_path or default_config_path()),
            "builtinHomes": None if config.from_file else [str(home) for home in builtin_source_homes().values()],
            "identityPath": str(workspace.identity_file()),
            "storePath": str(os.path.abspath(path)),
            "space": target.space,
            "roots": roots,
            "books": [book.path(source_id).name for source_id in self._source_ids] + [book.publication_path().name],
            "sources": sources,
        }

    def _consistent(self, before: Before, unchanged: UnchangedSources) -> bool:
        """What the decision used is what `before` observed (checked between the two
        observations, so it holds for the observed inputs)."""
        plan, inputs = before
        workspace = self._workspace
        target = unchanged.target
        if workspace.sync_sources(self._names) != self._source_ids:
            return False
        for source_id in self._source_ids:
            check = unchanged.checks.get(source_id)
            if check is None or check.fingerprint is None or check.fingerprint.digest != inputs["fingerprints"][source_id]:
                return False
        store = inputs["store"]
        if f"sqlite:{store['meta'].get('storeId')}" != target.store.store_id():
            return False
        own = target.labels.to_json()
        if any(deleted or labels != own for _seq, deleted, labels in store["roots"]):
            return False
        return self._config_consistent(plan, inputs) and self._identity_consistent(plan, inputs)

    def _config_consistent(self, plan: dict[str, Any], inputs: dict[str, Any]) -> bool:
        import tomllib

        from lib.config import MAX_CONFIG_BYTES, parse_config

        config = self._workspace.config
        if not config.from_file:
            return inputs["config"] is None
        try:
            with open(plan["configPath"], "rb") as handle:
                raw = handle.read(MAX_CONFIG_BYTES + 1)
        except OSError:
            return False
        if hashlib.sha256(raw).hexdigest() != inputs["config"] or len(raw) > MAX_CONFIG_BYTES:
            return False
        from pathlib import Path

        return parse_config(tomllib.loads(raw.decode("utf-8")), Path(plan["configPath"])) == config

    def _identity_consistent(self, plan: dict[str, Any], inputs: dict[str, Any]) -> bool:
        from pathlib import Path

        from lib.fabric import identity

        try:
            with open(plan["identityPath"], "rb") as handle:
                raw = handle.read()
        except OSError:
            return False
        if hashlib.sha256(raw).hexdigest() != inputs["identity"]:
            return False
        return identity._parse(Path(plan["identityPath"]), raw).did == self._workspace.identity.did  # noqa: SLF001


def idle_records(unchanged: UnchangedSources, source_ids: list[str], publication: dict[str, Any]) -> list[dict]:
    """What an idle sync prints: each source's records, then the kept publication."""
    records = []
    for source_id in source_ids:
        records.extend(unchanged.unchanged_records(unchanged.checks[source_id], observed=False))
    records.append(publication)
    return records

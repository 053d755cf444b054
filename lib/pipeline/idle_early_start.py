"""The idle fast path's early start: when the kept idle answer cannot be given because a
source's Codex home changed, start that source's Codex now (lib/drivers/codex_early.py),
before the normal path's imports, so its start-up overlaps them.

Standard library and the fast path's own modules only (cli/fast_sync.py calls it after
lib/pipeline/idle_inputs.py's `answer` said no). Nothing is started unless the kept
answer is for this very command line and state directory, the source's kept plan says
how its Codex is launched (`launch`, codex_fingerprint.py), and the home's digest,
taken here before anything starts, differs from the one the answer was kept with: then
the normal path lists that source whatever else changed. The digest becomes the
source's fingerprint in the normal path (taken before Codex started, as it must be).

With the client's version (cli/fast_sync.py gives agentctl's), the child is asked at
once as the driver would ask it (lib/drivers/codex_early_list.py): `initialize`, and the
first `thread/list` pages of the leading sources whose homes changed, each after that
source's observation sequence is allocated here, in the store, in order (a listing
follows its sequence; the normal path lists from that sequence, `codex_early.take_sequence`).
"""

from __future__ import annotations

from lib.drivers import codex_early
from lib.drivers.codex_home_files import find_codex_program, home_digest
from lib.pipeline import idle_inputs

SEQUENCE_NAME = "observation"  # lib.fabric.ordering.SEQUENCE_NAME (a test holds them equal)

TYPE_CHECKING = False  # typing itself is not imported on the fast path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def start_changed_homes(names: list[str], environ: Mapping[str, str], taken: Mapping[str, Any] | None = None, *,
                        client_version: str | None = None) -> int:
    """Start the Codex of every kept source whose home changed; how many were started.
    `taken`: the digests `idle_inputs.answer` just observed (`observe`'s), used instead of
    walking each home again (they too were taken before anything started). With
    `client_version`, each child is initialized at once and the leading ones list early
    (the module's docstring). Never raises: in any doubt nothing is started, or nothing
    listed, and the driver does it as before."""
    if environ.get(idle_inputs.DISABLE_VARIABLE):
        return 0
    try:
        state_dir = idle_inputs.state_directory(environ)
        kept = idle_inputs.load_answer(state_dir)
        plan = kept["plan"]
        if kept["request"] != names or plan["stateDir"] != state_dir:
            return 0
        digests = kept["inputs"].get("fingerprints")
        started, leading = 0, []
        for source_id, recipe in plan["sources"].items():
            if not isinstance(recipe, dict) or recipe.get("kind") != "codex-home" or "launch" not in recipe:
                leading = None  # a source after this one may not list before it
                continue
            program, digest = _digest(recipe, environ, (taken or {}).get(source_id))
            if digest is None or not isinstance(digests, dict) or digest.digest == digests.get(source_id):
                leading = None
                continue  # cannot be told, or unchanged: the normal path decides as before
            if not codex_early.start(recipe, program, digest, environ, source_id=source_id,
                                     client_version=client_version):
                leading = None
            else:
                started += 1
                if leading is not None:
                    leading.append(source_id)
        if client_version is not None and leading:
            _allow_listing(plan, kept["inputs"].get("store"), leading)
        codex_early.settle_listings()
        return started
    except Exception:  # noqa: BLE001 - only a head start: without it the driver starts Codex itself
        return 0


def _allow_listing(plan: Mapping[str, Any], kept_store: Any, source_ids: list[str]) -> None:
    """Allocate the observation sequences of `source_ids`, in order, as the store's
    `next_sequence` does (lib/fabric/sqlite_store.py), and let each child list from its
    own. Only in the store and space the answer was kept for, with its meta rows
    (schema, store id) as they were then."""
    import sqlite3

    try:
        conn = idle_inputs.connect_store(plan["storePath"])
    except idle_inputs.Undecided:
        return
    try:
        conn.execute("PRAGMA busy_timeout = 50")  # another writer: no early listing, rather than a wait
        conn.execute("PRAGMA synchronous = FULL")  # as the store commits (lib/fabric/sqlite_connections.py)
        conn.execute("BEGIN IMMEDIATE")
        meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('schemaVersion', 'storeId')"))
        row = conn.execute("SELECT id FROM spaces WHERE did = ?", (plan["space"],)).fetchone()
        if row is None or not isinstance(kept_store, dict) or meta != kept_store.get("meta"):
            conn.execute("ROLLBACK")
            return
        sequences = [conn.execute(
            "INSERT INTO sequences (space_id, name, value) VALUES (?, ?, 1) "
            "ON CONFLICT (space_id, name) DO UPDATE SET value = value + 1 RETURNING value",
            (row[0], SEQUENCE_NAME)).fetchone()[0] for _ in source_ids]
        conn.execute("COMMIT")
    except sqlite3.Error:
        return  # not allocated: the children wait for the driver, as before
    finally:
        conn.close()
    origin = f"sqlite:{meta['storeId']} {plan['space']}"  # FabricTarget.observation_origin (SQLiteStore.store_id)
    for source_id, sequence in zip(source_ids, sequences, strict=True):
        codex_early.allow_listing(source_id, origin, sequence)


def _digest(recipe: Mapping[str, Any], environ: Mapping[str, str], observed: Any) -> tuple[str | None, Any]:
    """(program, home digest) of a kept source: the one observed for this very home and
    program if there is one, else taken now."""
    program = find_codex_program(recipe["codexBin"], environ)
    if program is None:
        return None, None
    if observed is not None and observed[0] == (program, recipe["home"], recipe["databases"]):
        return program, observed[1]
    return program, home_digest(program, recipe["home"], recipe["databases"])

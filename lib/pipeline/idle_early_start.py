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
"""

from __future__ import annotations

from lib.drivers import codex_early
from lib.drivers.codex_home_files import find_codex_program, home_digest
from lib.pipeline import idle_inputs

TYPE_CHECKING = False  # typing itself is not imported on the fast path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def start_changed_homes(names: list[str], environ: Mapping[str, str], taken: Mapping[str, Any] | None = None) -> int:
    """Start the Codex of every kept source whose home changed; how many were started.
    `taken`: the digests `idle_inputs.answer` just observed (`observe`'s), used instead of
    walking each home again (they too were taken before anything started). Never raises:
    in any doubt nothing is started and the driver starts it as before."""
    if environ.get(idle_inputs.DISABLE_VARIABLE):
        return 0
    try:
        state_dir = idle_inputs.state_directory(environ)
        kept = idle_inputs.load_answer(state_dir)
        plan = kept["plan"]
        if kept["request"] != names or plan["stateDir"] != state_dir:
            return 0
        digests = kept["inputs"].get("fingerprints")
        started = 0
        for source_id, recipe in plan["sources"].items():
            if not isinstance(recipe, dict) or recipe.get("kind") != "codex-home" or "launch" not in recipe:
                continue
            program, digest = _digest(recipe, environ, (taken or {}).get(source_id))
            if digest is None or not isinstance(digests, dict) or digest.digest == digests.get(source_id):
                continue  # cannot be told, or unchanged: the normal path decides as before
            started += codex_early.start(recipe, program, digest, environ)
        return started
    except Exception:  # noqa: BLE001 - only a head start: without it the driver starts Codex itself
        return 0


def _digest(recipe: Mapping[str, Any], environ: Mapping[str, str], observed: Any) -> tuple[str | None, Any]:
    """(program, home digest) of a kept source: the one observed for this very home and
    program if there is one, else taken now."""
    program = find_codex_program(recipe["codexBin"], environ)
    if program is None:
        return None, None
    if observed is not None and observed[0] == (program, recipe["home"], recipe["databases"]):
        return program, observed[1]
    return program, home_digest(program, recipe["home"], recipe["databases"])

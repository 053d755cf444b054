"""`agentctl sync` beside a broken provider (issue 9, item 10): a provider that hangs,
floods or never ends a line fails its own source with a stable code, and the healthy
source beside it (the real Codex) still publishes; the run exits 3.

The broken source is the fake child (tests/support/fake_codex_child.py) with small limits:
1 MiB lines and a stall timeout of 5 s (room for a fake child slow to start on a loaded
machine), which the hang tests wait out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import CODEX_BIN, agentctl_env, run
from tests.support.codex_home import demo_threads, make_codex_home
from tests.support.fake_codex_child import child_argv

GUARD_SECONDS = 120  # a guard against today's fault (sync hanging for ever), never reached


def two_sources(tmp_path: Path, mode: str) -> Path:
    """A healthy real Codex source and a broken fake one, with small fault limits."""
    home = make_codex_home(tmp_path / "home", demo_threads())
    config = tmp_path / "config.toml"
    config.write_text(
        f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\ncodexBin = "{CODEX_BIN}"\n'
        f'[sources.broken]\ndriver = "codex-app-server"\ncommand = {json.dumps(child_argv(mode))}\n'
        f"maxLineBytes = 1048576\nstallTimeoutSeconds = 5\n"
    )
    return config


@pytest.mark.parametrize(("mode", "code"), [
    ("hang", "provider-stalled"),
    ("flood", "line-too-long"),
    ("never-ends-line", "provider-stalled"),
])
def test_sync_beside_a_provider_that_hangs_floods_or_never_ends_a_line_publishes_the_rest_and_exits_3(
    tmp_path, mode, code
):
    env = agentctl_env(tmp_path / "state", two_sources(tmp_path, mode), AGENTCTL_CLOCK="2026-02-12T09:00:00.000Z")
    result = run(["sync", "--json"], env, timeout=GUARD_SECONDS)
    assert result.returncode == 3, result.stderr
    errors = result.of("error")
    assert [(e["sourceId"], e["code"]) for e in errors] == [("broken", code)], errors
    assert "source broken" in errors[0]["message"]
    publication = result.of("publication")[-1]
    by_source = {s["sourceId"]: s for s in publication["sources"]}
    assert by_source["codex"]["inventoryComplete"] and by_source["codex"]["read"] == len(demo_threads())
    assert not by_source["broken"]["inventoryComplete"]
    published = run(["sessions", "--json"], env).records
    assert len(published) == len(demo_threads()) and {r["sourceId"] for r in published} == {"codex"}

"""`make demo`: the main job (`agentctl sync`) on the embedded store, against a demo
Codex home with a few fixture threads, then the published sessions.

Everything lives under `.demo/` in the checkout; nothing of the user's is touched.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.cli import AGENTCTL, CODEX_BIN, REPO, write_codex_config
from tests.support.codex_home import demo_threads, make_codex_home

DEMO = REPO / ".demo"


def main() -> int:
    home = DEMO / "codex-home"
    if not home.exists():
        make_codex_home(home, demo_threads())
    config = write_codex_config(DEMO / "config.toml", home)
    env = {**os.environ, "AGENTCTL_CONFIG": str(config), "AGENTCTL_STATE_DIR": str(DEMO / "state")}
    env.pop("AGENTCTL_STORE", None)
    env.pop("AGENTCTL_SPACE", None)
    steps = (["sync"], ["sessions"])
    for args in steps:
        print(f"\n$ agentctl {' '.join(args)}", flush=True)
        done = subprocess.run([AGENTCTL, *args], env=env)
        if done.returncode != 0:
            return done.returncode
    print(
        f"\nThe store is {DEMO / 'state' / 'fabric.sqlite3'}; the demo Codex home is {home}.\n"
        f"Run it yourself: AGENTCTL_CONFIG={config} AGENTCTL_STATE_DIR={DEMO / 'state'} "
        f"{AGENTCTL} show <KEY> --events\n"
        "Against your own agents: agentctl sync (uses ~/.codex and `codex` on your PATH, "
        f"or set codexBin; the pinned Codex is {CODEX_BIN}).",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

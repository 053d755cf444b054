"""How often a listing idle sync walks the Codex home (session 24). Each walk stats every
rollout (30-60 ms at 3,000 threads on a quiet machine), and before this session the
listing idle sync walked it seven times: twice in the fast path (its decision, then the
early start), once more before the listing (the idle answer's observation, of no use to a
run that lists) and four times after it. Session 24 made it four: the fast path's decision
(the early start takes that digest), the trust check after the listing, and the two
observations around the next run's idle decision (the decision takes the first one's
digest). Session 25: three, the trust check's digest (taken after Codex exited, before
the decision) being the next answer's first observation too.

Real home, the real pinned Codex, a real store: `agentctl sync --json` runs in a fresh
interpreter with `codex_home_files.home_digest` counted (a counter around the real
function, not a fake: every digest is still taken)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from lib.pipeline.unchanged_sources import UNSURE_SECONDS
from tests.test_cli_idle_fast_path import agentctl, steady_world

# `agentctl sync --json` run in this interpreter, its stdout to {out}, its exit code in `code`
SYNC_IN_PROCESS = """
sys.argv = ["agentctl", "sync", "--json"]
from cli.main import main
code = 0
with open({out!r}, "w") as sink, contextlib.redirect_stdout(sink):
    try:
        main()
    except SystemExit as exc:
        code = exc.code
"""

COUNTED_RUN = """
import contextlib, json, sys, traceback
from lib.drivers import codex_home_files
real = codex_home_files.home_digest
walks = []

def counted(*args, **kwargs):
    walks.append([frame.name for frame in traceback.extract_stack()[:-1]])
    return real(*args, **kwargs)

codex_home_files.home_digest = counted  # before anything imports it by name
""" + SYNC_IN_PROCESS + """from lib.drivers import codex_early
print(json.dumps({{"code": code, "walks": walks, "lent": len(getattr(codex_early, "_lent", ()))}}), file=sys.stderr)
"""


def touch_a_rollout(world) -> None:
    """A rollout's status-change time moves, its bytes and times do not (as a `chmod` or
    a backup tool moves it): the home's digest changes, what Codex lists does not."""
    rollout = sorted((world.home / "sessions").rglob("rollout-*.jsonl"))[0]
    info = rollout.stat()
    os.utime(rollout, ns=(info.st_atime_ns, info.st_mtime_ns))


def counted_sync(env: dict[str, str], out) -> dict:
    done = subprocess.run([sys.executable, "-c", COUNTED_RUN.format(out=str(out))], env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    return json.loads(done.stderr.strip().splitlines()[-1])


def answered_fast_within(world, tries: int = 4) -> bool:
    """Whether one of `tries` syncs, each a little after the one before (as from cron),
    is answered by the fast path. A sync right after one that ran Codex may find the
    home changed within its unsure window (Codex's exit writes its state database), keep
    nothing and list again; the next one, later, finds it settled."""
    for _ in range(tries):
        if agentctl(["sync", "--json"], world.env()).fast:
            return True
        time.sleep(UNSURE_SECONDS + 0.2)
    return False


def test_a_listing_idle_sync_walks_the_home_three_times_not_seven(tmp_path):
    world = steady_world(tmp_path)
    world.prime()
    # Codex may checkpoint its database as it exits, which changes the home: then the
    # trust check fails, nothing is kept and the tail does not observe; so up to 4 times
    for _attempt in range(4):
        assert answered_fast_within(world), "an idle answer is kept"
        touch_a_rollout(world)  # the home changed: the fast path refuses and starts Codex early
        time.sleep(UNSURE_SECONDS + 0.2)  # as a sync from cron minutes later: the new fingerprint can be trusted
        run = counted_sync(world.env(), tmp_path / "out.jsonl")
        assert run["code"] == 0
        assert '"idle":true' not in (tmp_path / "out.jsonl").read_text(), "it listed"
        walks = run["walks"]
        assert "answer" in walks[0] and "start_changed_homes" not in walks[0], "the decision's walk, taken once"
        assert "_trustworthy" in walks[1], "nothing walked between the decision and the listing's end"
        if len(walks) == 3:
            break
        assert len(walks) == 2, walks  # the trust check failed: nothing more is observed
    callers = [walk[-1] for walk in walks]
    assert callers == ["_home_digest", "codex_inventory_fingerprint", "_home_digest"], walks
    assert "keep_next_idle_answer" in walks[2] and "keep" in walks[2], "the next answer's second observation"
    assert run["lent"] == 0, "nothing lent is left for a later fingerprint"
    # what was kept is right: the next sync is answered from it, as the normal path answers
    fast = agentctl(["sync", "--json"], world.env())
    assert fast.fast and '"idle":true' in fast.stdout
    normal = agentctl(["sync", "--json"], world.env(), normal=True)
    assert (normal.returncode, normal.stdout) == (fast.returncode, fast.stdout)

"""What a listing idle sync has imported when its first `thread/list` goes to Codex
(issue 14 goal 3, session 25). When the home changed, `agentctl sync` lists through
Codex and reads nothing; its Codex is started by the idle fast path, and the first
pages are asked from there too (lib/drivers/codex_early_list.py), before click,
pydantic, cryptography or the store's and the stages' modules are imported, so Codex
lists while they are. Before this session the first `thread/list` went out only after
all of them (0.8 s loaded at 300 threads).

Real home, the real pinned Codex, a real store: `agentctl sync --json` runs in a fresh
interpreter in which every write to a `codex app-server`'s stdin is looked at as it
goes (`os.write` and the child's stdin stream wrapped, nothing faked): at the first one
that asks `thread/list`, the modules imported so far and the store's observation
sequence are noted."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from lib.pipeline.unchanged_sources import UNSURE_SECONDS
from tests.test_cli_idle_fast_path import agentctl, steady_world
from tests.test_cli_idle_home_walks import SYNC_IN_PROCESS, touch_a_rollout

WATCHED_RUN = """
import contextlib, json, os, sqlite3, subprocess, sys
first = {{}}
fds = set()
real_write = os.write

def note(data):
    if not first and b'"method":"thread/list"' in bytes(data[:120]):
        first["modules"] = sorted(sys.modules)
        with contextlib.closing(sqlite3.connect({store!r})) as db:
            first["sequence"] = db.execute("SELECT max(value) FROM sequences WHERE name = 'observation'").fetchone()[0]

def watched_write(fd, data):
    if fd in fds:
        note(data)
    return real_write(fd, data)

class WatchedInput:
    def __init__(self, stream):
        self._stream = stream
    def write(self, data):
        note(data)
        return self._stream.write(data)
    def __getattr__(self, name):
        return getattr(self._stream, name)

real_init = subprocess.Popen.__init__

def watched_init(self, args, *rest, **options):
    real_init(self, args, *rest, **options)
    if "app-server" in list(args) and self.stdin is not None:
        fds.add(self.stdin.fileno())
        self.stdin = WatchedInput(self.stdin)

os.write = watched_write
subprocess.Popen.__init__ = watched_init
""" + SYNC_IN_PROCESS + """print(json.dumps({{"code": code, **first}}), file=sys.stderr)
"""

# Not imported when the first page is asked: what the normal path imports before it lists.
NOT_BEFORE_THE_FIRST_PAGE = ("click", "pydantic", "pydantic_core", "cryptography", "lib.types", "lib.workspace",
                             "lib.fabric", "lib.config", "cli.commands.sync", "lib.pipeline.sync",
                             "lib.drivers.codex_app_server", "lib.drivers.jsonrpc_transport")


def watched_sync(world, out) -> dict:
    store = str(world.tmp / "fabric.sqlite3")
    done = subprocess.run([sys.executable, "-c", WATCHED_RUN.format(out=str(out), store=store)], env=world.env(),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_the_first_page_of_a_listing_idle_sync_is_asked_before_click_pydantic_or_the_store_is_imported(tmp_path):
    world = steady_world(tmp_path)
    world.prime()
    assert any(agentctl(["sync", "--json"], world.env()).fast for _ in range(4)), "an idle answer is kept"
    touch_a_rollout(world)  # the home changed: the fast path refuses, starts Codex and lists early
    time.sleep(UNSURE_SECONDS + 0.2)
    run = watched_sync(world, tmp_path / "out.jsonl")
    assert run["code"] == 0
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert not any(record.get("idle") for record in records), "it listed"
    assert "modules" in run, "a thread/list was written"
    imported = set(run["modules"])
    for heavy in NOT_BEFORE_THE_FIRST_PAGE:
        assert {m for m in imported if m == heavy or m.startswith(heavy + ".")} == set(), heavy
    # the listing follows its observation sequence: allocated (in the store) before that
    # first page, and the one the run's source record carries
    (source,) = [record for record in records if record.get("record") == "source"]
    assert run["sequence"] == source["observationSequence"]
    # and its records are what the normal path's own listing gives (but when it observed:
    # the home is changed again, so the normal path lists)
    touch_a_rollout(world)
    time.sleep(UNSURE_SECONDS + 0.2)
    normal = agentctl(["sync", "--json"], world.env(), normal=True)
    assert normal.returncode == 0, normal.stderr
    assert observed(normal.stdout.splitlines()) == observed(line for line in (tmp_path / "out.jsonl").read_text()
                                                            .splitlines())


def observed(lines) -> list:
    """The records but the publication's (its generation), without when they were
    observed (the time and the sequence)."""
    shown = []
    for line in lines:
        record = json.loads(line)
        if record.get("record") != "publication":
            for key in ("observedAt", "observationSequence", "observationOrigin"):
                record.pop(key, None)
            shown.append(record)
    return shown

"""The cyclic collector and `agentctl`'s start-up and end (cli/main.py), in fresh
interpreters calling the real main() as the console script does:

- no collection runs while the normal path imports, up to the command's module (each
  would walk every module, class and model made so far: about 75 of them before `sync`'s
  command ran); then those objects are frozen and the collector is back on;
- however main() ends, every object still alive is frozen, so the interpreter's teardown
  does not walk them (about 40 ms of CPU after a listing idle sync).

Output and exit codes are unchanged."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.cli import agentctl_env

# main() in this interpreter; what the collector did and holds, and the exit code, on stderr
RUN_MAIN = """
import gc, json, sys
command_module = sys.argv[2]
collections = {"start-up": 0, "after": 0}
def count(phase, info):  # from click's import (the normal path's first) on
    if phase == "start" and "click" in sys.modules:
        collections["after" if command_module in sys.modules else "start-up"] += 1
gc.callbacks.append(count)
sys.argv = ["agentctl", *json.loads(sys.argv[1])]
frozen_before = gc.get_freeze_count()
from cli.main import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"before": frozen_before, "frozen": gc.get_freeze_count(), "young": gc.get_count()[0],
                  "enabled": gc.isenabled(), "collections": collections, "code": code}), file=sys.stderr)
"""


def run_main(args: list[str], env: dict[str, str], command_module: str = "cli.commands.list") -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", RUN_MAIN, json.dumps(args), command_module], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return json.loads(done.stderr.strip().splitlines()[-1]), done.stdout


def test_no_collection_while_the_normal_path_imports_its_command(tmp_path):
    report, stdout = run_main(["list", "--help"], agentctl_env(tmp_path / "state"))
    assert report["code"] == 0 and stdout.startswith("Usage: agentctl list"), stdout  # printed as before
    assert report["collections"]["start-up"] == 0, report
    assert report["enabled"] is True  # on again once the command was loaded


def test_a_command_through_click_ends_with_its_objects_frozen(tmp_path):
    report, _ = run_main(["list", "--help"], agentctl_env(tmp_path / "state"))
    assert report["before"] == 0
    # click, pydantic, the configuration and the command's modules: tens of thousands of objects
    assert report["frozen"] > 20_000, report
    assert report["young"] < 100, report  # nothing young is left for the teardown's collection


def test_an_error_before_any_command_loads_ends_with_the_collector_on_and_its_objects_frozen(tmp_path):
    report, _ = run_main(["no-such-command"], agentctl_env(tmp_path / "state"))
    assert report["code"] == 2  # a usage error: its exit code, as before
    assert report["enabled"] is True
    assert report["frozen"] > 5_000, report

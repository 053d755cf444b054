"""When `agentctl`'s main() ends, however it ends, every object still alive is frozen
(gc.freeze): the interpreter's teardown then skips them in its last collections instead
of walking every module, model and row the run made (about 40 ms of CPU after a listing
idle sync). Each run is a fresh interpreter calling the real main(), as the console
script does; its output and exit code are unchanged."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.cli import agentctl_env

# main() in this interpreter; then what the collector holds, and the exit code, on stderr
RUN_MAIN = """
import gc, json, sys
sys.argv = ["agentctl", *json.loads(sys.argv[1])]
frozen_before = gc.get_freeze_count()
from cli.main import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"before": frozen_before, "frozen": gc.get_freeze_count(), "young": gc.get_count()[0],
                  "code": code}), file=sys.stderr)
"""


def run_main(args: list[str], env: dict[str, str]) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", RUN_MAIN, json.dumps(args)], env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    return json.loads(done.stderr.strip().splitlines()[-1]), done.stdout


def test_a_command_through_click_ends_with_its_objects_frozen(tmp_path):
    env = agentctl_env(tmp_path / "state")
    report, stdout = run_main(["list", "--help"], env)
    assert report["code"] == 0
    assert report["before"] == 0
    # click, pydantic, the configuration and the command's modules: tens of thousands of objects
    assert report["frozen"] > 20_000, report
    assert report["young"] < 100, report  # nothing young is left for the teardown's collection
    assert stdout.startswith("Usage: agentctl list"), stdout  # printed as before


def test_an_error_exit_ends_with_its_objects_frozen(tmp_path):
    env = agentctl_env(tmp_path / "state")
    report, _ = run_main(["no-such-command"], env)
    assert report["code"] == 2  # a usage error: its exit code, as before
    assert report["frozen"] > 5_000, report

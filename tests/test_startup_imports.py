"""Start-up imports only what it uses (issue 14, goal 6): `agentctl --version` imports
neither click nor any lib module; a bare `agentctl --help` neither click nor lib (its
help is rendered from the declarations); a help click renders imports click and the
small cli modules, no subcommand module, no pydantic, no lib module beyond lib.errors; a
subcommand imports its own module and no other subcommand's. Checked on the real
console script's own `-X importtime` report, not by timing."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from dataclasses import dataclass
from importlib.metadata import version

import pytest

from cli.commands import COMMAND_TABLE
from cli.version import VERSION
from lib.pipeline.idle_inputs import DISABLE_VARIABLE
from tests.support.cli import AGENTCTL, REPO, agentctl_env


@dataclass
class StartupRun:
    """One run of the real `agentctl` console script under `python -X importtime`."""

    returncode: int
    stdout: str
    stderr: str  # without the import-time lines
    modules: set[str]

    def imported(self, prefix: str) -> set[str]:
        """Modules named `prefix` or below it."""
        return {m for m in self.modules if m == prefix or m.startswith(prefix + ".")}


def run_with_imports(args: list[str], env: dict[str, str], timeout: float = 120,
                     python_only: bool = False) -> StartupRun:
    """`agentctl ARGS` (or, `python_only`, `python -c pass`: Python's own start-up)."""
    program = ["-c", "pass"] if python_only else [AGENTCTL, *args]
    done = subprocess.run([sys.executable, "-X", "importtime", *program], env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    modules, other = set(), []
    for line in done.stderr.splitlines():
        if line.startswith("import time:"):
            name = line.rsplit("|", 1)[-1].strip()
            if name != "imported package":  # the header line
                modules.add(name)
        else:
            other.append(line)
    return StartupRun(done.returncode, done.stdout, "\n".join(other), modules)


# What `agentctl --help` may import from lib: the exit-code table main() ends with, and
# the collector's start-up hold (gc and contextlib only).
HELP_LIB_MODULES = {"lib", "lib.errors", "lib.gc_pause"}
HEAVY = ("pydantic", "pydantic_core", "cryptography", "sqlite3", "filelock", "asyncio", "logging")
COMMAND_MODULES = {entry.module for entry in COMMAND_TABLE}


def test_version_imports_neither_click_nor_lib(tmp_path):
    result = run_with_imports(["--version"], agentctl_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"agentctl, version {VERSION}\n"
    assert "cli.main" in result.modules  # the runner sees the script's own imports
    assert result.imported("click") == set()
    assert result.imported("lib") == set()
    for heavy in HEAVY:
        assert result.imported(heavy) == set(), heavy


# What a bare `agentctl --help` imports beyond Python's own start-up: the group's help is
# rendered from its declarations and the command table (cli/group_help.py), with textwrap.
BARE_HELP_MODULES = {"cli", "cli.main", "cli.version", "cli.commands", "cli.group_declarations",
                     "cli.group_help", "textwrap"}


@pytest.mark.parametrize("args", [["--help"], ["-h"]])
def test_bare_help_imports_neither_click_nor_lib_nor_a_command_module(tmp_path, args):
    result = run_with_imports(args, agentctl_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "Commands:" in result.stdout
    assert result.imported("click") == set()
    assert result.imported("lib") == set()
    assert result.modules.isdisjoint(COMMAND_MODULES), result.modules & COMMAND_MODULES
    for heavy in (*HEAVY, "dataclasses", "inspect", "typing", "shutil"):
        assert result.imported(heavy) == set(), heavy
    floor = run_with_imports([], agentctl_env(tmp_path), python_only=True)
    assert result.modules - floor.modules <= BARE_HELP_MODULES, result.modules - floor.modules


def test_help_through_click_imports_no_command_module_no_pydantic_and_only_lib_errors(tmp_path):
    result = run_with_imports(["-q", "--help"], agentctl_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "Commands:" in result.stdout
    assert "click" in result.modules
    assert result.imported("lib") <= HELP_LIB_MODULES, result.imported("lib")
    assert result.modules.isdisjoint(COMMAND_MODULES), result.modules & COMMAND_MODULES
    for heavy in HEAVY:
        assert result.imported(heavy) == set(), heavy


def test_version_after_a_global_option_goes_through_click_and_says_the_same(tmp_path):
    result = run_with_imports(["-q", "--version"], agentctl_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "click" in result.modules  # not the fast path: click's own --version
    assert result.stdout == f"agentctl, version {VERSION}\n"
    assert result.imported("pydantic") == set() and result.imported("lib") <= HELP_LIB_MODULES


@pytest.mark.parametrize("entry", COMMAND_TABLE, ids=lambda entry: entry.name)
def test_a_subcommand_help_imports_its_module_and_no_other_command_module(tmp_path, entry):
    result = run_with_imports([entry.name, "--help"], agentctl_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Usage: agentctl {entry.name} ")
    assert entry.module in result.modules
    assert result.modules & COMMAND_MODULES == {entry.module}


def test_the_version_is_the_installed_package_version_and_pyprojects():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert VERSION == project["version"] == version("agentctl")


# What an idle sync of an unchanged home has no use for: the provider's transport, the
# pipeline's stages, the store's file locks (and asyncio under filelock), the other commands.
IDLE_SYNC_UNUSED = (
    "lib.drivers.jsonrpc_transport", "lib.drivers.websocket_pipe", "wsproto", "h11", "ssl",
    "lib.pipeline.build", "lib.pipeline.publish_stage", "lib.pipeline.read_stage", "filelock", "asyncio",
    "lib.executor", "lib.host", "lib.worker", "lib.transcript", "ctypes",
    # nor the command and receipt models, the queues and receipt cells a target makes on
    # first use, the publication, or what only a sync that lists runs (session 20)
    "lib.commands", "lib.receipts", "lib.fabric.receipt_cells", "lib.fabric.command_queues",
    "lib.fabric.publication", "lib.fabric.publication_resolve", "lib.pipeline.listing",
    "lib.pipeline.read_ahead", "lib.pipeline.runner", "queue",
)
# lib.types models an idle sync never uses: built on first use (defer_build), so not here.
IDLE_SYNC_UNBUILT_MODELS = ("SessionSummary", "SessionPage", "NormalizedMessage", "NativeSessionSnapshot",
                            "PromptInput", "StartInput", "CommandError", "CommandExecutionResult")


def test_an_idle_sync_of_an_unchanged_home_imports_no_transport_stage_or_lock(tmp_path):
    from tests.test_cli_idle_sync import World

    world = World(tmp_path)
    world.prime()
    started = world.starts()
    env = {**world.env(), DISABLE_VARIABLE: "1"}  # the normal path (the fast one: the next test)
    result = run_with_imports(["sync", "--json"], env)
    assert result.returncode == 0, result.stderr
    assert '"inventoryUnchanged":true' in result.stdout and world.starts() == started  # idle indeed
    assert result.modules & COMMAND_MODULES == {"cli.commands.sync"}
    for module in IDLE_SYNC_UNUSED:
        assert result.imported(module) == set(), module
    # It still imports pydantic (lib.types, lib.reconcile, lib.git_context import it at
    # module level), cryptography (the identity's key check) and click (the options): see
    # docs/start-up.md. Of lib.types' models it builds only those it uses:
    built = run_in_process_models(["sync", "--json"], env, tmp_path / "out.jsonl")
    assert built["inventoryUnchanged"], built
    assert built["built"] == [], built["built"]  # no unused model was built
    assert "AgentSourceConfig" in built["complete"]  # the check sees a built one as built


# What the idle fast path (cli/fast_sync.py) may import beyond Python's own start-up: the
# cli and lib modules of the decision and the standard library's json, hashlib, sqlite3
# (and datetime under it), shutil (the program lookup) and signal. Session 21's goal: at
# most ~130 modules in all, against 368 for the normal path.
IDLE_FAST_PATH_MODULE_LIMIT = 130
IDLE_FAST_PATH_LIB = {"lib", "lib.pipeline", "lib.pipeline.idle_inputs", "lib.drivers", "lib.drivers.codex_home_files"}


def test_an_idle_sync_answered_by_the_fast_path_imports_neither_click_pydantic_nor_cryptography(tmp_path):
    from tests.test_cli_idle_sync import World

    world = World(tmp_path)
    world.prime()
    started = world.starts()
    result = run_with_imports(["sync", "--json"], world.env())
    assert result.returncode == 0, result.stderr
    assert '"idle":true' in result.stdout and world.starts() == started
    floor = run_with_imports([], world.env(), python_only=True)  # what Python's start-up imports here
    added = result.modules - floor.modules
    for heavy in (*HEAVY[:3], "click", "cli.commands.sync", "lib.types", "lib.workspace", "lib.fabric", "pathlib",
                  "tomllib", "dataclasses", "typing", "asyncio", "logging"):
        assert {m for m in added if m == heavy or m.startswith(heavy + ".")} == set(), heavy
    assert result.imported("lib") == IDLE_FAST_PATH_LIB, result.imported("lib")
    assert len(result.modules) <= IDLE_FAST_PATH_MODULE_LIMIT, (len(result.modules), sorted(result.modules))


MODELS_AFTER_RUN = """
import json, sys
sys.argv = ["agentctl", *json.loads(sys.argv[1])]
from cli.main import main
try:
    with open({out!r}, "w") as sink:
        import contextlib
        with contextlib.redirect_stdout(sink):
            main()
except SystemExit:
    pass
import lib.types
complete = [name for name in dir(lib.types)
            if getattr(getattr(lib.types, name), "__pydantic_complete__", False)]
print(json.dumps(complete), file=sys.stderr)
"""


def run_in_process_models(args: list[str], env: dict[str, str], out) -> dict:
    """Run `agentctl ARGS` in a fresh interpreter and report which lib.types models were
    built by the time it ended."""
    import json

    done = subprocess.run([sys.executable, "-c", MODELS_AFTER_RUN.format(out=str(out)), json.dumps(args)],
                          env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    complete = json.loads(done.stderr.strip().splitlines()[-1])
    return {"complete": complete, "built": sorted(set(complete) & set(IDLE_SYNC_UNBUILT_MODELS)),
            "inventoryUnchanged": '"inventoryUnchanged":true' in out.read_text()}

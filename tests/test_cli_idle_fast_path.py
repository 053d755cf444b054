"""The idle fast path (cli/fast_sync.py, lib/pipeline/idle_inputs.py): `agentctl sync`
on an unchanged home answered without click, pydantic or cryptography, byte for byte as
the normal path answers it, and the normal path whenever any input differs.

Real Codex homes, the real pinned Codex (through the wrapper that logs each start), a
real SQLite store, real processes. Which path ran is read off the process itself: the
normal path imports click (`python -X importtime`), and it rewrites the kept answer
whenever it answers idle, while the fast path writes nothing.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cli.fast_sync import sync_request
from lib.pipeline.idle_inputs import DISABLE_VARIABLE, FILE_NAME
from tests.support.cli import AGENTCTL, pipeline, run_on_terminal
from tests.support.codex_home import (
    FixtureThread,
    FixtureTurn,
    demo_threads,
    uuid7_like,
    write_thread,
)
from tests.test_cli_idle_sync import World


class Ran:
    def __init__(self, done: subprocess.CompletedProcess, modules: set[str]) -> None:
        self.returncode = done.returncode
        self.stdout = done.stdout
        self.stderr = done.stderr
        self.modules = modules

    @property
    def fast(self) -> bool:
        return "click" not in self.modules and "pydantic" not in self.modules


def agentctl(args: list[str], env: dict[str, str], *, normal: bool = False, cwd: Path | None = None) -> Ran:
    """`agentctl ARGS` under `-X importtime` (stdout on a pipe); `normal` turns the fast
    path off."""
    env = {**env, DISABLE_VARIABLE: "1"} if normal else env
    done = subprocess.run([sys.executable, "-X", "importtime", AGENTCTL, *args], env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=cwd)
    modules, other = set(), []
    for line in done.stderr.splitlines(keepends=True):
        if line.startswith("import time:"):
            modules.add(line.rsplit("|", 1)[-1].strip())
        else:
            other.append(line)
    done.stderr = "".join(other)
    return Ran(done, modules)


def answer_file(world: World) -> Path:
    return world.tmp / "state" / "inventory-fingerprints" / FILE_NAME


def store_rows(world: World, store: str = "fabric.sqlite3") -> list:
    with sqlite3.connect(world.tmp / store) as db:
        rows = [(table, sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr))  # noqa: S608
                for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    db.close()
    return rows


def state_files(world: World) -> dict[str, tuple[int, int]]:
    """Every file of the state directory but the kept answer: (mode, size) by path."""
    found = {}
    for path in sorted((world.tmp / "state").rglob("*")):
        if path.name != FILE_NAME:
            info = path.lstat()
            found[str(path)] = (stat.S_IMODE(info.st_mode), 0 if path.is_dir() else info.st_size)
    return found


def steady_world(tmp_path: Path) -> World:
    """A World whose environment is the same in every phase of a test: pytest sets
    PYTEST_CURRENT_TEST to the phase, and a changed environment is not the one an
    answer was kept for (that the normal path then decides is tested below)."""
    world = World(tmp_path)
    env = world.env
    world.env = lambda store="fabric.sqlite3": {  # type: ignore[method-assign]
        k: v for k, v in env(store).items() if k != "PYTEST_CURRENT_TEST"}
    return world


@pytest.fixture
def world(tmp_path) -> World:
    world = steady_world(tmp_path)
    world.prime()
    return world


def assert_fast_as_normal(world: World, args: list[str], env: dict[str, str] | None = None) -> Ran:
    """The normal path's answer (which keeps it), then the fast path's: the same bytes,
    code and effects, and the fast one imported neither click nor pydantic."""
    env = env or world.env()
    started = world.starts()
    normal = agentctl(args, env, normal=True)
    assert normal.returncode == 0, normal.stderr
    assert not normal.fast and '"idle":true' in normal.stdout
    rows, files = store_rows(world), state_files(world)
    fast = agentctl(args, env)
    assert fast.fast, sorted(fast.modules)[:20]
    assert (fast.returncode, fast.stdout, fast.stderr) == (normal.returncode, normal.stdout, normal.stderr)
    assert store_rows(world) == rows and state_files(world) == files
    assert world.starts() == started, "neither path started Codex"
    return fast


# -- the same answer ---------------------------------------------------------------------------


def test_the_fast_answer_is_the_normal_paths_byte_for_byte(world):
    for args in (["sync", "--json"], ["sync"], ["-q", "sync"], ["sync", "-q", "--json"],
                 ["--quiet", "sync", "--json", "--quiet"]):
        fast = assert_fast_as_normal(world, args)
        assert fast.stdout.count("\n") == 3, args  # source, outcome, publication


def test_the_first_idle_sync_after_a_publication_is_fast_and_says_what_the_normal_path_says(world):
    # prime() ended with a publication: its run kept the answer the next sync gives
    first = agentctl(["sync", "--json"], world.env())
    assert first.fast
    normal = agentctl(["sync", "--json"], world.env(), normal=True)
    assert (first.returncode, first.stdout, first.stderr) == (normal.returncode, normal.stdout, normal.stderr)


def test_named_sources_are_answered_for_those_names_only(world):
    assert_fast_as_normal(world, ["sync", "codex", "--json"])
    # the kept answer is for `sync codex`: a bare `sync` is decided by the normal path
    assert not agentctl(["sync", "--json"], world.env()).fast
    assert agentctl(["sync", "--json"], world.env()).fast


def test_the_terminal_summary_is_the_normal_paths(world):
    env = world.env()
    normal = run_on_terminal(["sync"], {**env, DISABLE_VARIABLE: "1"})
    kept = answer_file(world).stat().st_ino
    fast = run_on_terminal(["sync"], env)
    assert answer_file(world).stat().st_ino == kept, "the fast path answered (the normal one rewrites it)"
    assert (fast.returncode, fast.stdout) == (normal.returncode, normal.stdout)
    assert "codex: home unchanged since the last complete sync, not listed" in fast.stdout


def test_two_sources_both_unchanged_are_answered_fast(world):
    from tests.support.codex_home import make_codex_home

    other = make_codex_home(world.tmp / "other-home", demo_threads()[:2])
    world.config_path.write_text(world.config_path.read_text() + f'[sources.other]\ndriver = "codex-app-server"\n'
                                 f'codexHome = "{other}"\ncodexBin = "{world.wrapper}"\n')
    for _ in range(5):
        world.settle()
        world.settle(other)
        if '"idle":true' in agentctl(["sync", "--json"], world.env(), normal=True).stdout:
            break
    fast = assert_fast_as_normal(world, ["sync", "--json"])
    assert fast.stdout.count('"inventoryUnchanged":true') == 2


def test_without_a_configuration_file_the_built_in_codex_source_is_answered_fast(tmp_path):
    world = steady_world(tmp_path)
    env = {k: v for k, v in world.env().items() if k != "AGENTCTL_CONFIG"}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "no-config"), CODEX_HOME=str(world.home),
               CODEX_BIN=str(world.wrapper), CLAUDE_CONFIG_DIR=str(tmp_path / "no-claude"))
    world.env = lambda store="fabric.sqlite3": env  # type: ignore[method-assign]
    world.prime()
    assert_fast_as_normal(world, ["sync", "--json"])
    # a Claude home appearing adds a built-in source: the normal path decides
    (tmp_path / "no-claude").mkdir()
    assert not agentctl(["sync", "--json"], env).fast


def test_into_a_closed_pipe_both_paths_end_alike(world):
    def closed_pipe(extra: dict[str, str]) -> tuple[int, bytes]:
        read, write = os.pipe()
        os.close(read)
        done = subprocess.run([AGENTCTL, "sync", "--json"], env={**world.env(), **extra}, stdout=write,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=300)
        os.close(write)
        return done.returncode, done.stderr

    normal = closed_pipe({DISABLE_VARIABLE: "1"})
    kept = answer_file(world).stat().st_ino
    assert closed_pipe({}) == normal
    assert answer_file(world).stat().st_ino == kept


def test_the_kept_answer_is_private_and_holds_no_environment_value(world):
    path = answer_file(world)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert os.environ.get("PATH", "") not in path.read_text()


@pytest.mark.parametrize("argv,expected", [
    (["sync"], ([], False)), (["-q", "sync", "--json"], ([], True)), (["sync", "a", "b"], (["a", "b"], False)),
    (["sync", "--full"], None), (["sync", "-v"], None), (["sync", "--lock-timeout", "5"], None),
    (["sync", "--"], None), (["sync", "-"], None), (["--store", "x", "sync"], None), (["list"], None),
    (["sync", "--json=1"], None), (["-qv", "sync"], None), ([], None),
])
def test_the_command_lines_the_fast_path_answers(argv, expected):
    assert sync_request(argv) == expected


# -- the normal path decides -------------------------------------------------------------------


def normal_ran(world: World, args: list[str] | None = None, env: dict[str, str] | None = None) -> Ran:
    done = agentctl(args or ["sync", "--json"], env or world.env())
    assert not done.fast, "the normal path ran"
    return done


@pytest.fixture
def fast_world(world) -> World:
    """A primed world whose next sync is answered fast (checked, then the checked run
    is repeated by the test after its change)."""
    assert agentctl(["sync", "--json"], world.env()).fast
    return world


def test_a_configuration_changed_in_one_byte_is_decided_by_the_normal_path(fast_world):
    fast_world.config_path.write_text(fast_world.config_path.read_text() + "# a comment\n")
    done = normal_ran(fast_world)
    assert '"idle":true' in done.stdout  # the same sources: still idle, and kept again
    assert agentctl(["sync", "--json"], fast_world.env()).fast


def refast(world: World) -> None:
    """Make the next plain `sync` fast again: the normal path keeps its answer. A run
    before this one may have started Codex (another store or state directory lists),
    which can checkpoint its database as it exits and so change the home: as
    World.prime does, settle and sync again until the answer is kept."""
    for _ in range(5):
        world.settle()
        agentctl(["sync", "--json"], world.env(), normal=True)
        if agentctl(["sync", "--json"], world.env()).fast:
            return
    pytest.fail("five settled syncs of an unchanged home never kept an idle answer")


def test_an_environment_variable_changed_is_decided_by_the_normal_path(fast_world):
    values = {
        "AGENTCTL_STORE": f"sqlite:///{fast_world.tmp / 'other.sqlite3'}",
        "AGENTCTL_CONFIG": str(shutil.copy(fast_world.config_path, fast_world.tmp / "copy.toml")),
        "AGENTCTL_STATE_DIR": str(fast_world.tmp / "other-state"),
        "AGENTCTL_SPACE": "did:key:z6MkhTvnZMmPeVM1BSwgUT7SG2WHa1huzNhxEmMwQe1SXRAn",
        "AGENTCTL_IDENTITY": str(fast_world.tmp / "other-identity.json"),
        "CODEX_SQLITE_HOME": str(fast_world.home),
        "SOMETHING_ELSE": "1",
    }
    for variable, value in values.items():
        refast(fast_world)
        normal_ran(fast_world, env={**fast_world.env(), variable: value})


def test_the_working_directory_changed_is_decided_by_the_normal_path(fast_world):
    done = agentctl(["sync", "--json"], fast_world.env(), cwd=fast_world.tmp)
    assert not done.fast


def test_a_new_thread_is_listed_by_the_normal_path(fast_world):
    created = datetime(2026, 2, 11, 8, 0, tzinfo=UTC)
    new = FixtureThread(id=uuid7_like(900, created), created_at=created,
                        turns=(FixtureTurn(id=uuid7_like(901, created), user="New", agent="Yes"),))
    write_thread(fast_world.home, new)
    started = fast_world.starts()
    done = normal_ran(fast_world)
    assert fast_world.starts() == started + 1 and '"idle":true' not in done.stdout


def test_an_appended_rollout_is_listed_by_the_normal_path(fast_world):
    rollout = sorted((fast_world.home / "sessions").rglob("rollout-*.jsonl"))[0]
    with rollout.open("a") as handle:
        handle.write("\n")
    started = fast_world.starts()
    normal_ran(fast_world)
    assert fast_world.starts() == started + 1


def test_a_title_set_in_codexs_state_database_is_listed_by_the_normal_path(fast_world):
    (database,) = fast_world.home.glob("state_*.sqlite")
    with sqlite3.connect(database) as db:
        db.execute("UPDATE threads SET title = ? WHERE id = ?", ("Set in the database", demo_threads()[2].id))
    db.close()
    started = fast_world.starts()
    normal_ran(fast_world)
    assert fast_world.starts() == started + 1


@pytest.mark.parametrize("change", ["rename", "archive", "delete"])
def test_a_change_through_codex_is_listed_by_the_normal_path(fast_world, change):
    thread = next(t for t in demo_threads() if not t.archived)
    with fast_world.codex() as codex:
        if change == "rename":
            assert codex.rename_session(thread.id, "Renamed").status == "succeeded"
        else:
            codex.transport.request(f"thread/{change}", {"threadId": thread.id})
    started = fast_world.starts()
    done = normal_ran(fast_world)
    assert fast_world.starts() == started + 1 and '"idle":true' not in done.stdout


def test_another_publication_moves_the_store_and_the_normal_path_lists(fast_world):
    runs = pipeline([["read", "--source", "codex", demo_threads()[0].id], ["publish"]], fast_world.env())
    assert runs[-1].returncode == 0, runs[-1].stderr
    started = fast_world.starts()
    normal_ran(fast_world)
    assert fast_world.starts() > started


def test_a_kept_answer_that_is_not_ours_is_not_used(fast_world):
    path = answer_file(fast_world)
    for damage in ("mode", "link", "garbage", "format", "owner"):
        refast(fast_world)
        if damage == "mode":
            path.chmod(0o644)
        elif damage == "link":
            moved = path.with_name("elsewhere")
            path.rename(moved)
            path.symlink_to(moved)
        elif damage == "garbage":
            path.write_text("{not json")
        elif damage == "format":
            path.write_text(path.read_text().replace('"format":1', '"format":2'))
        elif os.geteuid() == 0:  # changing a file's owner needs root
            os.chown(path, 4242, 4242)
        else:
            continue
        normal_ran(fast_world)
        assert stat.S_IMODE(path.lstat().st_mode) == 0o600 and not path.is_symlink(), "kept again, ours"


def test_a_loose_state_directory_is_decided_by_the_normal_path_which_tightens_it(fast_world):
    (fast_world.tmp / "state").chmod(0o755)
    done = normal_ran(fast_world)
    assert "made it 0700" in done.stderr


def test_an_identity_open_to_others_is_refused_by_the_normal_path(fast_world):
    (fast_world.tmp / "state" / "identity.json").chmod(0o640)
    done = normal_ran(fast_world)
    assert done.returncode == 2 and "identity file" in done.stderr


def test_an_option_the_fast_path_does_not_know_goes_to_the_normal_path(fast_world):
    for args in (["sync", "--full", "--json"], ["sync", "--json", "--lock-timeout", "5"], ["sync", "-v", "--json"],
                 ["sync", "--accept-deletions", "--json"], ["--state-dir", "state", "sync", "--json"]):
        refast(fast_world)
        done = agentctl(args, fast_world.env(), cwd=fast_world.tmp)
        assert not done.fast and done.returncode == 0, (args, done.stderr)


def test_a_postgres_store_goes_to_the_normal_path(fast_world):
    env = {**fast_world.env(), "AGENTCTL_STORE": "postgresql://nobody@127.0.0.1:9/none?connect_timeout=1"}
    done = normal_ran(fast_world, env=env)
    assert done.returncode != 0 and done.stderr.startswith("agentctl: ")


def test_a_store_file_removed_goes_to_the_normal_path(fast_world):
    for name in ("fabric.sqlite3", "fabric.sqlite3-wal", "fabric.sqlite3-shm"):
        (fast_world.tmp / name).unlink(missing_ok=True)
    started = fast_world.starts()
    normal_ran(fast_world)
    assert fast_world.starts() == started + 1  # a new store: everything listed again

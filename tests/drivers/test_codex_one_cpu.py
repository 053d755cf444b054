"""A Codex started only to collect runs on one CPU (lib/drivers/one_cpu.py); one that may
run prompts, or a source with collectOnOneCpu = false, keeps every CPU this process may
use. The real pinned Codex, the real idle fast path's early child and `agentctl sync`;
each child's affinity read from the kernel for every one of its threads."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from lib.drivers import codex_early
from lib.drivers.codex_app_server import CodexAppServerDriver
from lib.drivers.one_cpu import spawning_on_one_cpu
from lib.pipeline.idle_early_start import start_changed_homes
from lib.types import AgentSourceConfig
from tests.support.cli import CODEX_BIN
from tests.test_cli_idle_early_codex import append_a_line
from tests.test_cli_idle_fast_path import steady_world

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="CPU affinity is Linux's")


def thread_cpus(pid: int) -> list[set[int]]:
    """The CPUs each thread of process `pid` may run on."""
    return [os.sched_getaffinity(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")]


def started_driver(home: Path, *, collection_only: bool, **fields) -> CodexAppServerDriver:
    config = AgentSourceConfig(id="codex", driver="codex-app-server", codex_bin=str(CODEX_BIN),
                               codex_home=str(home), **fields)
    driver = CodexAppServerDriver(config)
    driver.collection_only = collection_only
    driver.start()
    return driver


@pytest.fixture
def home(tmp_path) -> Path:
    from tests.support.codex_home import demo_threads, make_codex_home

    return make_codex_home(tmp_path / "codex-home", demo_threads())


def test_a_collecting_codex_runs_on_one_cpu_and_this_process_keeps_its_cpus(home):
    ours = os.sched_getaffinity(0)
    driver = started_driver(home, collection_only=True)
    try:
        assert driver.list_sessions().sessions, "it answers"
        cpus = thread_cpus(driver.transport.pid)
        assert len(cpus) > 1, "Codex runs several threads"
        assert all(len(each) == 1 and each <= ours for each in cpus), cpus
        assert len({frozenset(each) for each in cpus}) == 1, "every thread on the same CPU"
    finally:
        driver.stop()
    assert os.sched_getaffinity(0) == ours, "the spawning thread got its CPUs back"


def test_a_codex_that_may_run_prompts_keeps_every_cpu(home):
    ours = os.sched_getaffinity(0)
    driver = started_driver(home, collection_only=False)  # the executor's (commands)
    try:
        assert all(each == ours for each in thread_cpus(driver.transport.pid))
    finally:
        driver.stop()


def test_collect_on_one_cpu_false_keeps_every_cpu_for_a_collecting_codex(home):
    ours = os.sched_getaffinity(0)
    driver = started_driver(home, collection_only=True, collect_on_one_cpu=False)
    try:
        assert all(each == ours for each in thread_cpus(driver.transport.pid))
    finally:
        driver.stop()


def test_the_setting_is_read_from_the_configuration_as_collect_on_one_cpu():
    config = AgentSourceConfig.model_validate({"id": "c", "driver": "codex-app-server", "collectOnOneCpu": False})
    assert config.collect_on_one_cpu is False
    assert AgentSourceConfig(id="c", driver="codex-app-server").collect_on_one_cpu is True


def test_a_spawn_that_fails_gives_the_thread_its_cpus_back():
    ours = os.sched_getaffinity(0)
    with pytest.raises(FileNotFoundError), spawning_on_one_cpu(True):
        assert len(os.sched_getaffinity(0)) == 1 or len(ours) == 1
        os.execv("/nonexistent/program", ["x"])  # raises before anything is replaced
    assert os.sched_getaffinity(0) == ours


def early_child(tmp_path: Path, monkeypatch) -> tuple[Any, int]:
    """A primed world whose home then changed, and the pid of the Codex the idle fast
    path started early for it (as `agentctl sync` would)."""
    world = steady_world(tmp_path)
    world.prime()
    append_a_line(world)
    for name, value in world.env().items():
        monkeypatch.setenv(name, value)
    assert start_changed_homes([], os.environ) == 1
    (early_pid,) = codex_early.pid_of_started()
    return world, early_pid


def test_the_idle_fast_paths_early_codex_runs_on_one_cpu_and_is_adopted(tmp_path, monkeypatch):
    ours = os.sched_getaffinity(0)
    world, early_pid = early_child(tmp_path, monkeypatch)
    try:
        assert all(len(each) == 1 and each <= ours for each in thread_cpus(early_pid))
        config = world.source.model_copy(update={"codex_bin": str(world.wrapper)})
        driver = CodexAppServerDriver(config)
        driver.collection_only = True  # as sync's driver pool makes it
        driver.start()
        try:
            assert driver.transport.pid == early_pid, "the sync's driver takes the early child"
        finally:
            driver.stop()
    finally:
        codex_early.discard()


def test_agentctl_sync_starts_codex_on_one_cpu(tmp_path):
    world = steady_world(tmp_path)
    record = tmp_path / "affinity.log"
    # a wrapper that writes the CPUs it was started on, then runs the real Codex
    world.wrapper.write_text(f'#!/bin/sh\necho "$CODEX_HOME $@" >> "{world.log}"\n'
                             f'grep Cpus_allowed_list: /proc/$$/status >> "{record}"\nexec "{CODEX_BIN}" "$@"\n')
    world.sync("--json")
    lines = record.read_text().split("\n")[:-1]
    assert lines, "Codex was started"
    for line in lines:
        allowed = line.split(":", 1)[1].strip()
        assert "-" not in allowed and "," not in allowed, f"started on {allowed!r}, not one CPU"


def test_a_driver_that_may_run_prompts_does_not_take_the_early_confined_child(tmp_path, monkeypatch):
    world, early_pid = early_child(tmp_path, monkeypatch)
    try:
        driver = CodexAppServerDriver(world.source.model_copy(update={"codex_bin": str(world.wrapper)}))
        driver.start()  # not only collecting: a child on one CPU is not its
        try:
            assert driver.transport.pid != early_pid
            assert all(each == os.sched_getaffinity(0) for each in thread_cpus(driver.transport.pid))
        finally:
            driver.stop()
    finally:
        codex_early.discard()

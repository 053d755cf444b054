"""`agentctl list | read | prepare` as real processes over the real Codex app server."""

from __future__ import annotations

import pytest

from tests.support.cli import agentctl_env, pipeline, run, write_codex_config
from tests.support.codex_home import demo_threads, make_codex_home


@pytest.fixture(scope="module")
def codex_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipeline")
    home = make_codex_home(root / "codex-home", demo_threads())
    config = write_codex_config(root / "config.toml", home)
    return agentctl_env(root / "state", config)


@pytest.fixture(scope="module")
def listing(codex_env):
    result = run(["list", "codex"], codex_env)
    assert result.returncode == 0, result.stderr
    return result


def test_list_writes_the_source_then_every_summary_then_the_outcome(listing):
    kinds = [r["record"] for r in listing.records]
    assert kinds[0] == "source" and kinds[-1] == "outcome"
    assert set(kinds[1:-1]) == {"summary"}
    assert listing.records[0]["source"]["id"] == "codex"
    assert listing.records[0]["source"]["driver"] == "codex-app-server"
    ids = {r["summary"]["nativeSessionId"] for r in listing.of("summary")}
    assert ids == {thread.id for thread in demo_threads()}
    outcome = listing.of("outcome")[0]
    assert outcome["inventoryComplete"] is True and outcome["listed"] == len(ids)


def test_list_read_prepare_pipe_prepares_every_listed_session(codex_env, listing):
    *_, last = pipeline([["list", "codex"], ["read"], ["prepare"]], codex_env)
    assert last.returncode == 0, last.stderr
    prepared = last.of("prepared")
    assert {p["nativeSessionId"] for p in prepared} == {t.id for t in demo_threads()}
    assert all(p["key"] == f"codex/{p['nativeSessionId']}" for p in prepared)
    assert all(p["snapshotHash"].startswith("sha256:") for p in prepared)
    # the source descriptor and the merged outcome travel all the way through
    assert last.of("source")[0]["source"]["id"] == "codex"
    outcome = last.of("outcome")[0]
    assert outcome["stage"] == "read" and outcome["complete"] is True
    assert outcome["read"] == len(prepared)


def test_prepare_reads_the_sessions_summary_records_name_itself(codex_env):
    *_, explicit = pipeline([["list", "codex"], ["read"], ["prepare"]], codex_env)
    *_, short = pipeline([["list", "codex"], ["prepare"]], codex_env)
    assert short.returncode == 0, short.stderr
    hashes = lambda run_: sorted((p["key"], p["snapshotHash"]) for p in run_.of("prepared"))  # noqa: E731
    assert hashes(short) == hashes(explicit)


def test_a_malformed_line_in_the_middle_of_a_stream_yields_one_error_and_the_rest_goes_through(codex_env, listing):
    lines = listing.stdout.splitlines(keepends=True)
    middle = len(lines) // 2
    broken = "".join(lines[:middle]) + "{this is not json\n" + "".join(lines[middle:])
    *_, last = pipeline([["read"], ["prepare"]], codex_env, input=broken)
    errors = last.of("error")
    assert len(errors) == 1
    assert errors[0]["code"] == "bad-input" and errors[0]["line"] == middle + 1
    assert f"line {middle + 1}" in errors[0]["message"]
    assert len(last.of("prepared")) == len(listing.of("summary"))
    assert last.returncode == 3  # partial: something was wrong, the rest went through


def test_read_by_session_id_argument_writes_a_snapshot_with_events(codex_env):
    thread = demo_threads()[0]
    result = run(["read", "--source", "codex", thread.id], codex_env)
    assert result.returncode == 0, result.stderr
    (snapshot,) = result.of("snapshot")
    assert snapshot["snapshot"]["summary"]["nativeSessionId"] == thread.id
    assert snapshot["snapshot"]["events"], "turns are native events"
    outcome = result.of("outcome")[0]
    assert outcome["inventoryComplete"] is False  # a targeted read lists nothing


def test_reading_an_unknown_session_is_an_error_record_and_exit_3(codex_env):
    result = run(["read", "--source", "codex", "01a22a97-0000-7000-8000-000000000000"], codex_env)
    assert result.returncode == 3
    (error,) = result.of("error")
    assert error["stage"] == "read" and error["nativeSessionId"] == "01a22a97-0000-7000-8000-000000000000"
    assert "Traceback" not in result.stderr


def test_an_unknown_source_is_a_usage_error_with_one_line(codex_env):
    result = run(["list", "nope"], codex_env)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "unknown source 'nope'" in result.stderr


def test_every_stage_help_shows_an_example(codex_env):
    for command in ("list", "read", "prepare"):
        result = run([command, "--help"], codex_env)
        assert result.returncode == 0 and "Example:" in result.stdout, command

"""Sources as the user names them: drivers this agentctl does not have, programs that
are missing, and source ids in any spelling (one driver per source)."""

from __future__ import annotations

from tests.support.cli import CODEX_BIN, agentctl_env, run
from tests.support.codex_home import demo_threads, make_codex_home


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    return lines[0]


def test_listing_an_acp_source_whose_agent_program_is_missing_is_one_line_naming_it_and_exit_1(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[sources.Work]\ndriver = "acp"\ncommand = ["my-agent", "--acp"]\n')
    env = agentctl_env(tmp_path / "state", config)
    result = run(["list", "Work"], env)
    assert result.returncode == 1, result.stderr
    line = one_line(result.stderr)
    assert line.startswith("agentctl: ") and "source work " in line and "'my-agent'" in line
    assert result.stdout == ""


def test_a_source_whose_program_is_missing_fails_with_one_line_and_exit_1(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.codex]\ndriver = "codex-app-server"\ncodexBin = "{tmp_path / "no" / "codex"}"\n')
    result = run(["list", "codex"], agentctl_env(tmp_path / "state", config))
    assert result.returncode == 1, result.stderr
    line = one_line(result.stderr)
    assert "source codex cannot start" in line and "codexBin" in line


def test_an_acp_source_without_command_is_a_configuration_error_naming_the_file_and_source(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[sources.codex]\ndriver = "codex-app-server"\n[sources.work]\ndriver = "acp"\n')
    result = run(["list", "codex"], agentctl_env(tmp_path / "state", config))
    assert result.returncode == 2, result.stderr
    line = one_line(result.stderr)
    assert str(config) in line and "[sources.work]" in line and "command" in line


def test_a_source_configured_as_codex_in_capitals_starts_one_app_server_however_it_is_named(tmp_path):
    """`[sources.Codex]` synced as `Codex`, then as `Codex codex`: one app-server per
    run, the source listed and published once, under the id `codex`."""
    starts = tmp_path / "starts"
    wrapper = tmp_path / "codex"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{starts}"\nexec "{CODEX_BIN}" "$@"\n')
    wrapper.chmod(0o755)
    home = make_codex_home(tmp_path / "home", demo_threads())
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.Codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\ncodexBin = "{wrapper}"\n')
    env = agentctl_env(tmp_path / "state", config, AGENTCTL_CLOCK="2026-02-12T09:00:00.000Z")
    count = len(demo_threads())

    for args in (["sync", "Codex"], ["sync", "Codex", "\ufeffcodex ", "--full"]):
        starts.write_text("")
        result = run([*args, "--json"], env)
        assert result.returncode == 0, result.stderr
        assert len(starts.read_text().splitlines()) == 1, (args, starts.read_text())
        assert [r["source"]["id"] for r in result.of("source")] == ["codex"]
        assert len(result.of("published")) == count
        [source] = result.of("publication")[0]["sources"]
        assert (source["sourceId"], source["listed"], source["inventoryComplete"]) == ("codex", count, True)
    assert source["read"] == count

    listed = run(["sessions", "--source", "\ufeffCODEX", "--json"], env)
    assert len(listed.of("session")) == count
    assert {row["key"].split("/")[0] for row in listed.of("session")} == {"codex"}

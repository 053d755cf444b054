"""`agentctl init`, as a real process, with HOME, CODEX_HOME, CLAUDE_CONFIG_DIR and PATH
pointed at temporary directories."""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

import pytest

from lib import init_config
from lib.config import load_config
from lib.errors import CodedError
from lib.init_config import ACP_AGENTS, find_sources, render_config
from lib.workspace import Workspace
from tests.support.cli import run

CLEARED = ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME")


def init_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    bin_dir = tmp_path / "bin"
    home.mkdir(exist_ok=True)
    bin_dir.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCTL_") and k not in CLEARED}
    env.update(HOME=str(home), PATH=str(bin_dir))
    env.update(extra)
    return env


def config_file(tmp_path: Path) -> Path:
    return tmp_path / "home" / ".config" / "agentctl" / "config.toml"


def identity_file(tmp_path: Path) -> Path:
    return tmp_path / "home" / ".local" / "state" / "agentctl" / "identity.json"


def fake_program(tmp_path: Path, name: str) -> Path:
    program = tmp_path / "bin" / name
    program.parent.mkdir(exist_ok=True)
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    return program


def test_finds_a_codex_home_and_a_claude_directory(tmp_path):
    codex, claude = tmp_path / "codex-home", tmp_path / "claude-dir"
    codex.mkdir()
    claude.mkdir()
    env = init_env(tmp_path, CODEX_HOME=str(codex), CLAUDE_CONFIG_DIR=str(claude))
    result = run(["init"], env)
    assert result.returncode == 0, result.stderr
    config = load_config(config_file(tmp_path))
    assert config.source("codex").driver == "codex-app-server"
    assert config.source("codex").codex_home == str(codex)
    assert config.source("claude").driver == "claude-agent-sdk"
    assert config.source("claude").config_dir == str(claude)
    assert {s.id for s in config.enabled_sources()} == {"codex", "claude"}
    assert "agentctl sync" in result.stdout and "agentctl sessions" in result.stdout
    assert "agentctl serve" in result.stdout
    assert str(config_file(tmp_path)) in result.stdout and str(identity_file(tmp_path)) in result.stdout


def test_the_default_homes_under_home_are_found(tmp_path):
    env = init_env(tmp_path)
    (tmp_path / "home" / ".codex").mkdir()
    assert run(["init"], env).returncode == 0
    config = load_config(config_file(tmp_path))
    assert config.source("codex").codex_home == str(tmp_path / "home" / ".codex")
    assert config.source("claude") is None  # only a commented-out example
    assert "#[sources.claude]" in config_file(tmp_path).read_text()


def test_an_acp_agent_on_path_is_written_disabled(tmp_path):
    program = fake_program(tmp_path, "codex-acp")
    gemini = fake_program(tmp_path, "gemini")
    env = init_env(tmp_path)
    result = run(["init", "--json"], env)
    assert result.returncode == 0, result.stderr
    config = load_config(config_file(tmp_path))
    source = config.source("codex-acp")
    assert source.driver == "acp" and source.command == [str(program)] and source.enabled is False
    assert config.source("gemini").command == [str(gemini), "--acp"] and config.source("gemini").enabled is False
    assert config.enabled_sources() == []
    text = config_file(tmp_path).read_text()
    assert re.search(r"# .*set enabled = true\n\[sources\.codex-acp\]", text)
    (record,) = result.of("init")
    assert {"id": "codex-acp", "driver": "acp", "enabled": False} in record["sources"]
    # an agent not on PATH is only an example
    assert "#[sources.claude-agent-acp]" in text and config.source("claude-agent-acp") is None


def test_a_program_that_is_not_executable_is_not_an_agent(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "codex-acp").write_text("not a program")
    result = run(["init"], init_env(tmp_path))
    assert result.returncode == 0
    assert load_config(config_file(tmp_path)).source("codex-acp") is None


def test_nothing_found_still_writes_a_valid_file_of_examples(tmp_path):
    result = run(["init", "--json"], init_env(tmp_path))
    assert result.returncode == 0, result.stderr
    text = config_file(tmp_path).read_text()
    config = load_config(config_file(tmp_path))
    assert config.from_file and config.sources == ()
    for name in ("codex", "claude", *(agent.id for agent in ACP_AGENTS)):
        assert f"#[sources.{name}]" in text
    (record,) = result.of("init")
    assert record["configCreated"] is True and record["identityCreated"] is True
    assert record["sources"] == []
    assert record["config"] == str(config_file(tmp_path)) and record["identity"] == str(identity_file(tmp_path))
    assert record["did"].startswith("did:key:z")
    assert record["next"][0] == "agentctl sync"


def test_every_commented_example_loads_once_uncommented(tmp_path):
    """The examples are TOML commented with `#` and no space: removing it gives a valid file."""
    env = {"HOME": str(tmp_path), "PATH": str(tmp_path / "nothing"), "CODEX_HOME": str(tmp_path / "none"),
           "CLAUDE_CONFIG_DIR": str(tmp_path / "none")}
    sources = find_sources(env)
    assert not any(source.found for source in sources)
    text = render_config(sources, tmp_path / "state", "did:key:z6MkexampleExample")
    uncommented = tmp_path / "uncommented.toml"
    uncommented.write_text(re.sub(r"(?m)^#(?=[^ \n#])", "", text))
    config = load_config(uncommented)
    assert {s.id for s in config.sources} == {"codex", "claude", *(agent.id for agent in ACP_AGENTS)}
    assert config.store == f"sqlite://{tmp_path / 'state' / 'fabric.sqlite3'}"
    assert config.space == "did:key:z6MkexampleExample"


def test_a_second_run_changes_nothing(tmp_path):
    (tmp_path / "home" / ".codex").mkdir(parents=True)
    fake_program(tmp_path, "claude-agent-acp")
    env = init_env(tmp_path)
    first = run(["init"], env)
    assert first.returncode == 0, first.stderr
    config, identity = config_file(tmp_path), identity_file(tmp_path)
    before = (config.read_bytes(), config.stat().st_mtime_ns, identity.read_bytes(), identity.stat().st_mtime_ns)
    (tmp_path / "home" / ".claude").mkdir()  # found now, but the file is not init's to change any more
    second = run(["init", "--json"], env)
    assert second.returncode == 0, second.stderr
    after = (config.read_bytes(), config.stat().st_mtime_ns, identity.read_bytes(), identity.stat().st_mtime_ns)
    assert after == before
    (record,) = second.of("init")
    assert record["configCreated"] is False and record["identityCreated"] is False
    third = run(["init"], env)
    assert "exists; left as it is" in third.stdout and "exists; kept" in third.stdout
    assert sorted(p.name for p in config.parent.iterdir()) == ["config.toml"]  # no temporary file left


def test_an_edited_configuration_is_left_as_it_is(tmp_path):
    env = init_env(tmp_path)
    config = config_file(tmp_path)
    config.parent.mkdir(parents=True)
    config.write_text("# mine\n")
    result = run(["init"], env)
    assert result.returncode == 0
    assert config.read_text() == "# mine\n"
    assert "exists; left as it is" in result.stdout
    assert identity_file(tmp_path).exists()  # the identity is still created


def test_file_and_directory_modes(tmp_path):
    env = init_env(tmp_path)
    old = os.umask(0o022)
    try:
        assert run(["init"], env).returncode == 0
    finally:
        os.umask(old)
    config = config_file(tmp_path)
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "home" / ".config").stat().st_mode) == 0o700
    assert stat.S_IMODE(identity_file(tmp_path).stat().st_mode) == 0o600


def test_an_existing_directory_is_not_changed(tmp_path):
    where = tmp_path / "project"
    where.mkdir()
    where.chmod(0o755)
    result = run(["init", "--config", str(where / "agentctl.toml")], init_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(where.stat().st_mode) == 0o755
    assert stat.S_IMODE((where / "agentctl.toml").stat().st_mode) == 0o600
    # the next steps name the file, since a plain `agentctl` would not read it
    assert f"agentctl --config {where / 'agentctl.toml'} sync" in result.stdout


def test_the_config_path_from_the_environment(tmp_path):
    path = tmp_path / "elsewhere" / "c.toml"
    result = run(["init", "--json"], init_env(tmp_path, AGENTCTL_CONFIG=str(path)))
    assert result.returncode == 0, result.stderr
    assert path.is_file() and not config_file(tmp_path).exists()
    assert result.of("init")[0]["next"][0] == "agentctl sync"  # the environment carries it


def test_a_symlinked_config_path_is_refused(tmp_path):
    env = init_env(tmp_path)
    target = tmp_path / "target.toml"
    link = tmp_path / "link.toml"
    link.symlink_to(target)
    result = run(["init", "--config", str(link)], env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "symbolic link" in result.stderr and "Traceback" not in result.stderr
    assert not target.exists() and link.is_symlink()
    assert not identity_file(tmp_path).exists()  # nothing was created


def test_a_symlink_to_an_existing_file_is_left_alone(tmp_path):
    target = tmp_path / "dotfiles.toml"
    target.write_text("# mine\n")
    link = tmp_path / "link.toml"
    link.symlink_to(target)
    result = run(["init", "--config", str(link)], init_env(tmp_path))
    assert result.returncode == 0
    assert target.read_text() == "# mine\n" and link.is_symlink()


def test_a_directory_as_config_path_is_one_line_and_exit_2(tmp_path):
    where = tmp_path / "adir"
    where.mkdir()
    env = init_env(tmp_path, AGENTCTL_CONFIG=str(where))
    result = run(["init"], env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "is a directory" in result.stderr and "Traceback" not in result.stderr
    assert not identity_file(tmp_path).exists()


def test_a_config_path_under_a_file_is_one_line_and_exit_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run(["init", "--config", str(blocker / "sub" / "config.toml")], init_env(tmp_path))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "is not a directory" in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_location_is_one_line(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        result = run(["init", "--config", str(locked / "config.toml")], init_env(tmp_path))
    finally:
        locked.chmod(0o700)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "cannot create configuration file" in result.stderr


def test_an_existing_identity_is_kept(tmp_path):
    env = init_env(tmp_path)
    identity = tmp_path / "me.json"
    first = run(["init", "--identity", str(identity), "--json"], env)
    assert first.returncode == 0, first.stderr
    did = first.of("init")[0]["did"]
    config_file(tmp_path).unlink()
    second = run(["init", "--identity", str(identity), "--json"], env)
    (record,) = second.of("init")
    assert record["did"] == did and record["identityCreated"] is False and record["configCreated"] is True


def test_an_unusable_identity_stops_before_the_configuration(tmp_path):
    env = init_env(tmp_path)
    identity = tmp_path / "me.json"
    identity.write_text("{}")
    identity.chmod(0o644)
    result = run(["init", "--identity", str(identity)], env)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert identity.read_text() == "{}"
    assert not config_file(tmp_path).exists()


@pytest.mark.parametrize(("error", "exit_code"), [(errno.EACCES, 2), (errno.EROFS, 2), (errno.ENOSPC, 1)])
def test_a_write_that_fails_is_a_coded_error(tmp_path, monkeypatch, error, exit_code):
    """Permission denied or a read-only file system: choose another path (2); a full disk: the write failed (1)."""
    def refuse(directory):  # noqa: ANN001, ANN202
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(init_config, "make_directories", refuse)
    monkeypatch.setenv("HOME", str(tmp_path))
    workspace = Workspace(config_path=tmp_path / "c" / "config.toml", state_dir=tmp_path / "state")
    with pytest.raises(CodedError) as caught:
        init_config.initialize(workspace, {"HOME": str(tmp_path), "PATH": ""})
    assert int(caught.value.exit_code) == exit_code
    assert "cannot create configuration file" in caught.value.message and os.strerror(error) in caught.value.message

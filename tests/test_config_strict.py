"""Configuration and usage mistakes are one line and exit 2, never internal errors
(issue 9, item 6): strict types, values a program can be given, a DID for the space,
a cwd that exists, click's usage errors in one line."""

from __future__ import annotations

import pytest

from lib.config import ConfigError, load_config
from tests.support.cli import CODEX_BIN, agentctl_env, run

CODEX = f'[sources.codex]\ndriver = "codex-app-server"\ncodexBin = "{CODEX_BIN}"\n'


def refused(tmp_path, text: str | bytes) -> str:
    path = tmp_path / "config.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(path) in caught.value.message
    return caught.value.message


def one_line_exit_2(result) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agentctl: ") and "internal error" not in lines[0]
    return lines[0]


@pytest.mark.parametrize("key, value, kind", [
    ("allowDangerFullAccess", '"true"', "a string"),
    ("enabled", '"false"', "a string"),
    ("enabled", "1", "an integer"),
    ("command", '"codex app-server"', "a string"),
    ("cwd", '["/tmp"]', "an array"),
    ("env", '["A=1"]', "an array"),
    ("codexHome", "5", "an integer"),
    ("codexTransport", '["stdio"]', "an array"),
])
def test_a_value_of_the_wrong_type_is_refused_naming_the_key_and_what_was_given(tmp_path, key, value, kind):
    message = refused(tmp_path, f"{CODEX}{key} = {value}\n")
    assert f"[sources.codex]: {key}" in message and f"(got {kind})" in message


def test_a_string_true_for_allow_danger_full_access_is_refused_at_the_command_line(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(f'{CODEX}allowDangerFullAccess = "true"\n')
    line = one_line_exit_2(run(["list", "codex"], agentctl_env(tmp_path / "state", config)))
    assert "allowDangerFullAccess" in line and str(config) in line


@pytest.mark.parametrize("setting", [
    'cwd = "/tmp\\u0000"',
    'codexHome = "\\u0000"',
    'command = ["codex\\u0000"]',
    'env = { A = "1\\u0000" }',
    'env = { "A=B" = "1" }',
    'env = { "" = "1" }',
])
def test_nul_characters_and_bad_environment_names_are_configuration_errors_not_internal_errors(tmp_path, setting):
    config = tmp_path / "config.toml"
    config.write_text(f"{CODEX}{setting}\n")
    line = one_line_exit_2(run(["list", "codex"], agentctl_env(tmp_path / "state", config)))
    assert str(config) in line


def test_a_store_url_with_a_nul_character_is_a_configuration_error_not_an_internal_error(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(f'store = "sqlite:///{tmp_path}/x\\u0000y"\n{CODEX}')
    line = one_line_exit_2(run(["list", "codex"], agentctl_env(tmp_path / "state", config)))
    assert "'store'" in line and str(config) in line


def test_deeply_nested_toml_is_a_configuration_error_not_an_internal_error(tmp_path):
    assert "nested too deeply" in refused(tmp_path, "store = " + "[" * 5000 + "]" * 5000 + "\n")
    config = tmp_path / "config.toml"
    line = one_line_exit_2(run(["sessions"], agentctl_env(tmp_path / "state", config)))
    assert "nested too deeply" in line


def test_a_huge_file_and_non_utf8_bytes_are_refused_with_one_line(tmp_path):
    from lib.config import MAX_CONFIG_BYTES
    assert "larger than" in refused(tmp_path, "# " + "x" * MAX_CONFIG_BYTES + "\n")
    assert "not UTF-8" in refused(tmp_path, b'store = "\xff\xfe"\n')


def test_empty_and_control_character_source_ids_are_refused(tmp_path):
    assert "must not be empty" in refused(tmp_path, '[sources." "]\ndriver = "acp"\ncommand = ["a"]\n')
    assert "control character" in refused(tmp_path, '[sources."a\\u0001b"]\ndriver = "acp"\ncommand = ["a"]\n')


def test_an_unknown_driver_is_refused_naming_what_was_given(tmp_path):
    message = refused(tmp_path, '[sources.x]\ndriver = "gemini"\n')
    assert "[sources.x]: driver" in message and "(got 'gemini')" in message


def test_a_missing_cwd_is_named_as_the_cwd_not_as_a_missing_program(tmp_path):
    config = tmp_path / "config.toml"
    missing = tmp_path / "no-such-directory"
    config.write_text(f'{CODEX}cwd = "{missing}"\n')
    env = agentctl_env(tmp_path / "state", config)
    line = one_line_exit_2(run(["list", "codex"], env))
    assert f"'cwd' {missing}" in line and str(config) in line and "no such program" not in line
    synced = run(["sync", "--json"], env)  # in a sync: that source's error, the run goes on
    assert synced.returncode == 3
    [error] = synced.of("error")
    assert error["code"] == "source-cwd-missing" and "'cwd'" in error["message"]


def test_a_space_that_is_not_a_did_is_refused_in_the_configuration(tmp_path):
    message = refused(tmp_path, 'space = "my-space"\n')
    assert "'space'" in message and "is not a DID" in message

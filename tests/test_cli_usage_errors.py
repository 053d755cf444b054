"""Usage errors are one line and exit 2: click's three lines (Usage, Try, Error) become
`agentctl: <what>; see agentctl <cmd> --help`, and a space must be a DID (issue 9, item 6)."""

from __future__ import annotations

import pytest

from lib.errors import UsageError
from lib.workspace import Workspace
from tests.support.cli import agentctl_env, run


def one_line_exit_2(result) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agentctl: ") and "internal error" not in lines[0]
    return lines[0]


@pytest.mark.parametrize("space", ["not-a-did", "did:key:", "did:KEY:x", "did:key:a b", ""])
def test_space_must_be_a_did_on_the_command_line(tmp_path, space):
    line = one_line_exit_2(run(["sessions", "--space", space], agentctl_env(tmp_path / "state")))
    assert "'--space'" in line and "is not a DID" in line and line.endswith("; see agentctl sessions --help")


def test_space_must_be_a_did_in_the_environment_and_for_the_library(tmp_path):
    env = agentctl_env(tmp_path / "state", AGENTCTL_SPACE="not-a-did")
    assert "is not a DID" in one_line_exit_2(run(["sessions"], env))
    with pytest.raises(UsageError, match="is not a DID"):
        Workspace(space="did:")


def test_a_did_space_is_accepted(tmp_path):
    result = run(["sessions", "--space", "did:web:example.com%3A8080:team", "--json"], agentctl_env(tmp_path / "state"))
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("args, command", [
    (["list", "--bogus"], "agentctl list"),
    (["--bogus", "sessions"], "agentctl"),
    (["list"], "agentctl list"),
    (["sync", "--lock-timeout", "soon"], "agentctl sync"),
    (["lst"], "agentctl"),
])
def test_usage_errors_are_one_line_naming_the_help_to_read(tmp_path, args, command):
    line = one_line_exit_2(run(args, agentctl_env(tmp_path / "state")))
    assert line.endswith(f"; see {command} --help")
    assert "Usage:" not in line and "Try " not in line and "Error:" not in line

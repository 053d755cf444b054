"""Command-line conventions every subcommand keeps."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
from pathlib import Path

import click

from cli.commands import COMMANDS
from lib.drivers.base import AgentDriver
from lib.types import AgentSourceConfig, PromptInput, StartInput
from tests.support.cli import AGENTCTL, REPO, agentctl_env, run


def _leaf_commands():
    """Every command a person runs: a group's subcommands instead of the group."""
    for command in COMMANDS:
        if isinstance(command, click.Group):
            yield from ([command.name, sub] for sub in command.commands)
        else:
            yield [command.name]


def test_every_subcommand_help_shows_an_example_and_the_global_options(tmp_path):
    env = agentctl_env(tmp_path)
    for words in _leaf_commands():
        result = run([*words, "--help"], env)
        assert result.returncode == 0, words
        assert "Example:" in result.stdout, words
        for option in ("--config", "--store", "--space", "--identity", "--state-dir", "-v, --verbose", "-q, --quiet"):
            assert option in result.stdout, (words, option)


def test_the_readme_documents_every_subcommand():
    readme = (REPO / "README.md").read_text()
    for command in COMMANDS:
        assert re.search(rf"agentctl {command.name}\b", readme), command.name


def test_an_unknown_option_is_a_usage_error_with_one_line(tmp_path):
    result = run(["list", "--bogus"], agentctl_env(tmp_path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_a_bad_configuration_is_one_line_and_exit_2(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[sources.codex]\ndriver = "codex-app-server"\ncodexHom = "/x"\n')
    result = run(["list", "codex"], agentctl_env(tmp_path, config))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "'codexHom'" in result.stderr and str(config) in result.stderr


def _prepare_with_stderr(tmp_path: Path, stderr_is_terminal: bool) -> str:
    snapshot = (
        '{"record":"snapshot","sourceId":"codex","driver":"codex-app-server","snapshot":'
        '{"summary":{"nativeSessionId":"s1"},"events":[{"id":"e1"}],"normalizedMessages":[],"complete":true}}\n'
    ) * 3
    env = agentctl_env(tmp_path)
    if not stderr_is_terminal:
        done = subprocess.run([AGENTCTL, "prepare"], input=snapshot, env=env, capture_output=True, text=True)
        return done.stderr
    leader, follower = pty.openpty()
    # a terminal of 80 columns: tqdm draws nothing on a terminal without a size
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        proc = subprocess.Popen([AGENTCTL, "prepare"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=follower, env=env, text=True)
        os.close(follower)
        proc.communicate(snapshot, timeout=120)
        chunks = []
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        return b"".join(chunks).decode(errors="replace")
    finally:
        os.close(leader)


def test_a_progress_bar_appears_on_stderr_only_when_stderr_is_a_terminal(tmp_path):
    assert "prepare" in _prepare_with_stderr(tmp_path, stderr_is_terminal=True)
    assert _prepare_with_stderr(tmp_path, stderr_is_terminal=False) == ""


class _InventoryOnly(AgentDriver):
    def start(self, signal=None):  # noqa: ANN001
        pass

    def stop(self):
        pass

    def list_sessions(self, cursor=None):  # noqa: ANN001
        raise AssertionError("not called")

    def read_session(self, native_session_id):  # noqa: ANN001
        raise AssertionError("not called")


def test_a_driver_without_an_operation_answers_unsupported_with_a_structured_error():
    driver = _InventoryOnly(AgentSourceConfig(id=" Work ", driver="acp"))
    results = [
        driver.prompt("s", PromptInput(text="hi")),
        driver.start_session("s", StartInput(text="hi")),
        driver.cancel("s"),
        driver.rename_session("s", "t"),
        driver.set_mode("s", "m"),
        driver.set_config_option("s", "k", 1),
    ]
    for result in results:
        assert result.status == "unsupported"
        assert result.error.code == "unsupported" and result.error.retryable is False
        assert "work" in result.error.message

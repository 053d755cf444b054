"""The global options go before or after the subcommand, as people type them."""

from __future__ import annotations

from tests.support.cli import agentctl_env, run, write_codex_config
from tests.support.codex_home import demo_threads, make_codex_home

CLOCK = "2026-02-12T09:00:00.000Z"
OTHER_SPACE = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


def test_global_options_after_the_subcommand_choose_config_state_identity_store_and_space(tmp_path):
    config = write_codex_config(tmp_path / "codex.toml", make_codex_home(tmp_path / "home", demo_threads()))
    env = agentctl_env(tmp_path / "env-state", AGENTCTL_CLOCK=CLOCK)  # an empty configuration
    state, identity = tmp_path / "state", tmp_path / "me.json"

    listed = run(["list", "codex", "--config", str(config), "--state-dir", str(state),
                  "--identity", str(identity), "--json"], env)
    assert listed.returncode == 0, listed.stderr
    assert len(listed.of("summary")) == len(demo_threads())
    assert (state / "fabric.sqlite3").exists() and identity.exists()
    assert not (state / "identity.json").exists() and not (tmp_path / "env-state").exists()

    store = f"sqlite:///{tmp_path / 'chosen.db'}"
    synced = run(["sync", "-q", "codex", "--config", str(config), "--store", store, "--json"], env)
    assert synced.returncode == 0, synced.stderr
    assert synced.of("publication")[0]["sessionCount"] == len(demo_threads())
    assert len(run(["sessions", "--store", store, "--json"], env).of("session")) == len(demo_threads())
    assert run(["sessions", "--store", store, "--space", OTHER_SPACE, "--json"], env).stdout == ""
    assert run(["sessions", "--json"], env).stdout == ""  # the environment's state directory: nothing


def test_a_global_option_after_the_subcommand_wins_and_the_environment_fills_in(tmp_path):
    config = write_codex_config(tmp_path / "codex.toml", make_codex_home(tmp_path / "home", demo_threads()))
    store, nowhere = f"sqlite:///{tmp_path / 'chosen.db'}", f"sqlite:///{tmp_path / 'nowhere.db'}"
    env = agentctl_env(tmp_path / "state", config, AGENTCTL_CLOCK=CLOCK, AGENTCTL_STORE=store)
    assert run(["sync", "codex", "--json"], env).returncode == 0  # the environment's store

    def rows(*args: str) -> int:
        result = run([*args, "--json"], env)
        assert result.returncode == 0, result.stderr
        return len(result.of("session"))

    count = len(demo_threads())
    assert rows("sessions") == count
    assert rows("--store", nowhere, "sessions") == 0  # an option beats the environment
    assert rows("--store", nowhere, "sessions", "--store", store) == count  # after beats before
    assert rows("sessions", "--store", nowhere) == 0


def test_v_after_the_subcommand_gives_the_traceback_and_the_one_line(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[sources.work]\ndriver = "acp"\ncommand = ["my-agent", "--acp"]\n')
    for args in (["list", "work", "-v"], ["list", "work", "--verbose"], ["-v", "list", "work"]):
        result = run(args, agentctl_env(tmp_path / "state", config))
        # the acp agent program is missing: a failure (exit 1), its traceback with -v
        assert result.returncode == 1, args
        assert "Traceback" in result.stderr and "DriverUnavailable" in result.stderr, args
        assert result.stderr.splitlines()[-1].startswith("agentctl: source work "), args
    quiet = run(["list", "work", "-q"], agentctl_env(tmp_path / "state", config))
    assert "Traceback" not in quiet.stderr and quiet.returncode == 1


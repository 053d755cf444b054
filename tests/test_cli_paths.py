"""Where the state lives: relative paths resolve against the working directory, once,
at start (issue 9, item 7), and a store that vanishes with the process is refused
(item 8)."""

from __future__ import annotations

import os

import pytest

from lib.config import ConfigError, load_config
from lib.fabric.store import open_store
from lib.fabric.store_errors import StoreUrlError
from lib.workspace import Workspace
from tests.support.cli import agentctl_env, run, write_codex_config
from tests.support.codex_home import demo_threads, make_codex_home


def rooted_elsewhere(tmp_path):
    """A relative path that, read against `/` instead of the working directory, would
    land in tmp_path/rootside (so the fault shows without writing outside tmp_path)."""
    return os.path.relpath(tmp_path / "rootside", "/")


@pytest.mark.parametrize("given", ["option", "environment"])
def test_a_relative_state_dir_puts_the_store_and_the_identity_under_the_working_directory(tmp_path, given):
    work = tmp_path / "work"
    work.mkdir()
    relative = rooted_elsewhere(tmp_path)
    env = agentctl_env(tmp_path / "unused")
    args = ["publish"]
    if given == "option":
        args += ["--state-dir", relative]
    else:
        env["AGENTCTL_STATE_DIR"] = relative
    result = run(args, env, input="", cwd=work)
    assert result.returncode == 0, result.stderr
    assert (work / relative / "fabric.sqlite3").is_file()
    assert (work / relative / "identity.json").is_file()
    assert not (tmp_path / "rootside").exists()


def test_relative_config_identity_and_store_resolve_against_the_working_directory(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "conf.toml").write_text("")
    env = agentctl_env(tmp_path / "state")
    result = run(["publish", "--config", "conf.toml", "--identity", "me.json", "--store", "sqlite:data/fabric.db"],
                 env, input="", cwd=work)
    assert result.returncode == 0, result.stderr
    assert (work / "me.json").is_file() and (work / "data" / "fabric.db").is_file()
    assert not (tmp_path / "state").exists()
    # the same store, spelled absolutely from elsewhere
    again = run(["publish", "--identity", str(work / "me.json"), "--store", f"sqlite://{work}/data/fabric.db"],
                env, input="", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.of("publication")[0]["generation"] == 2


def test_a_relative_state_dir_is_resolved_once_when_the_workspace_opens(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    workspace = Workspace(state_dir="state", config_path="conf.toml", identity_path="~/me.json",
                          store_url="sqlite:x.db")
    monkeypatch.chdir("/")
    assert workspace.state_path == tmp_path / "state"
    assert workspace.config_path == tmp_path / "conf.toml"
    assert workspace.identity_path == tmp_path / os.path.expanduser("~/me.json")
    assert workspace.store_url == f"sqlite://{tmp_path}/x.db"


def test_three_slashes_name_an_absolute_path_and_a_plain_sqlite_path_a_relative_one(tmp_path):
    from lib.fabric.store_url import resolve_store_url, sqlite_path

    assert sqlite_path("sqlite:///data/fabric.db") == "/data/fabric.db"
    assert resolve_store_url("sqlite:///data/fabric.db", tmp_path) == "sqlite:///data/fabric.db"
    assert resolve_store_url("sqlite:data/fabric.db", tmp_path) == f"sqlite://{tmp_path}/data/fabric.db"
    assert resolve_store_url("sqlite:~/f.db", None) == f"sqlite://{os.path.expanduser('~')}/f.db"
    with pytest.raises(StoreUrlError) as relative:
        resolve_store_url("sqlite:data/fabric.db", None)
    assert relative.value.code == "store-url-relative"
    with pytest.raises(StoreUrlError) as unresolved:  # the library takes only absolute paths
        open_store("sqlite:data/fabric.db")
    assert unresolved.value.code == "store-url-relative" and unresolved.value.exit_code == 2
    for bad in ("sqlite://host/fabric.db", "sqlite:", "sqlite:///", "sqlite:///x\0y"):
        with pytest.raises(StoreUrlError):
            sqlite_path(bad)


def test_a_relative_store_in_a_configuration_file_is_refused_naming_the_key_and_the_file(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('store = "sqlite:fabric.db"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(path) in caught.value.message and "'store'" in caught.value.message
    assert "relative" in caught.value.message


def test_a_relative_xdg_base_directory_is_ignored_as_the_specification_says(tmp_path, monkeypatch):
    from lib.config import default_config_path
    from lib.workspace import default_state_dir

    home = os.path.expanduser("~")
    assert default_state_dir({"XDG_STATE_HOME": "rel"}) == default_state_dir({}) == \
        default_state_dir({"XDG_STATE_HOME": ""})
    assert str(default_state_dir({})).startswith(home)
    assert default_config_path({"XDG_CONFIG_HOME": "rel"}) == default_config_path({})
    monkeypatch.chdir(tmp_path)
    assert default_config_path({"AGENTCTL_CONFIG": "c.toml"}) == tmp_path / "c.toml"


# -- item 8 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("given", ["option", "environment", "configuration"])
def test_an_in_memory_store_is_refused_instead_of_reporting_sessions_that_vanish(tmp_path, given):
    home = make_codex_home(tmp_path / "home", demo_threads())
    config = write_codex_config(tmp_path / "codex.toml", home)
    env = agentctl_env(tmp_path / "state", config)
    args = ["sync", "--json"]
    if given == "option":
        args += ["--store", "sqlite:///:memory:"]
    elif given == "environment":
        env["AGENTCTL_STORE"] = "sqlite:///:memory:"
    else:
        config.write_text('store = "sqlite:///:memory:"\n' + config.read_text())
    result = run(args, env)
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("agentctl: sqlite:///:memory: is a store that vanishes when agentctl exits")
    assert "sqlite:///" in line.split(";")[1]


def test_the_library_still_opens_in_memory_stores():
    with open_store("sqlite:///:memory:") as store:
        assert store.head("did:key:z6MkMemory") == 0

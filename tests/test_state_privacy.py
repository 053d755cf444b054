"""The state is private (issue 9, item 4): the state directory, the store file and the
lock directory are created private, tightened with one notice when they are ours and
loose, and refused with one line when they are planted (a symlink, another user's)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lib.fabric.lock_files import UnsafeLockDirectory, lock_directory_for
from lib.fabric.sqlite_store import SQLiteStore
from tests.support.cli import agentctl_env, run

SPACE = "did:key:z6MkPrivateSpace"
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a path to another user")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def publish_nothing(env: dict[str, str], *args: str):
    """`agentctl publish` of no records: opens the state, the identity and the store."""
    return run(["publish", *args], env, input="")


def test_a_new_state_directory_store_and_identity_are_created_private(tmp_path):
    state = tmp_path / "deeper" / "state"
    result = publish_nothing(agentctl_env(tmp_path / "state", AGENTCTL_STATE_DIR=str(state)))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert mode(state) == 0o700
    assert mode(state / "fabric.sqlite3") == 0o600 and mode(state / "identity.json") == 0o600
    assert mode(state / "fabric.sqlite3.locks") == 0o700


def test_a_world_writable_state_directory_is_tightened_with_one_notice(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)  # mkdir's mode is subject to the umask
    result = publish_nothing(agentctl_env(state))
    assert result.returncode == 0, result.stderr
    assert mode(state) == 0o700
    assert result.stderr.splitlines() == [
        f"agentctl: state directory {state} was mode 0777, open to other users; made it 0700 (private to you)"
    ]
    assert publish_nothing(agentctl_env(state)).stderr == ""  # said once, when it was done


def test_a_symlinked_state_directory_is_refused_naming_the_path_and_what_to_do(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    result = publish_nothing(agentctl_env(link))
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"agentctl: state directory {link} is a symbolic link (to {real});")
    assert "--state-dir" in line
    assert list(real.iterdir()) == []


@as_root
def test_a_state_directory_of_another_user_is_refused(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.chown(state, 4242, 4242)
    result = publish_nothing(agentctl_env(state))
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert f"state directory {state} belongs to uid 4242, not to you" in line
    assert list(state.iterdir()) == []


def test_a_state_directory_of_another_user_is_refused_fake_uid(tmp_path, monkeypatch):
    from lib.fabric import private_paths
    from lib.fabric.private_paths import UnsafeStatePath, ensure_private_directory

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    monkeypatch.setattr(private_paths.os, "geteuid", lambda: os.stat(state).st_uid + 1)
    with pytest.raises(UnsafeStatePath) as caught:
        ensure_private_directory(state, what="state directory", fix="choose another", code="unsafe-state-directory",
                                 notice=None)
    assert caught.value.code == "unsafe-state-directory" and caught.value.exit_code == 2
    assert "belongs to uid" in caught.value.message and "choose another" in caught.value.message


def test_a_world_readable_store_file_is_tightened_with_one_notice_by_a_reader_too(tmp_path):
    state = tmp_path / "state"
    env = agentctl_env(state)
    assert publish_nothing(env).returncode == 0
    store = state / "fabric.sqlite3"
    store.chmod(0o644)
    result = run(["sessions", "--json"], env)
    assert result.returncode == 0, result.stderr
    assert mode(store) == 0o600
    assert result.stderr.splitlines() == [
        f"agentctl: store file {store} was mode 0644, open to other users; made it 0600 (private to you)"
    ]


def test_a_symlinked_store_file_is_refused_naming_the_path(tmp_path):
    env = agentctl_env(tmp_path / "state")
    real, link = tmp_path / "real.db", tmp_path / "link.db"
    assert publish_nothing(env, "--store", f"sqlite://{real}").returncode == 0
    link.symlink_to(real)
    result = run(["sessions", "--store", f"sqlite://{link}", "--json"], env)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"agentctl: store file {link} is a symbolic link (to {real});")
    assert "--store" in line


@as_root
def test_a_store_file_of_another_user_is_refused(tmp_path):
    env = agentctl_env(tmp_path / "state")
    store = tmp_path / "other.db"
    assert publish_nothing(env, "--store", f"sqlite://{store}").returncode == 0
    os.chown(store, 4242, 4242)
    result = run(["sessions", "--store", f"sqlite://{store}", "--json"], env)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert f"store file {store} belongs to uid 4242" in line


def test_a_loose_lock_directory_is_refused_by_readers_too_and_left_untouched(tmp_path):
    state = tmp_path / "state"
    env = agentctl_env(state)
    assert publish_nothing(env).returncode == 0
    locks = state / "fabric.sqlite3.locks"
    locks.chmod(0o777)
    result = run(["sessions", "--json"], env)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert f"lock directory {locks} is writable by group or others" in line
    assert mode(locks) == 0o777


def test_loose_wal_and_shm_files_are_tightened_with_the_store_file(tmp_path):
    path = tmp_path / "f.db"
    SQLiteStore(path).close()
    for suffix in ("-wal", "-shm"):
        companion = Path(f"{path}{suffix}")
        companion.touch()
        companion.chmod(0o644)
    heard: list[str] = []
    SQLiteStore(path, notice=heard.append).close()
    assert sorted(heard) == sorted(
        f"agentctl: store file {path}{suffix} was mode 0644, open to other users; made it 0600 (private to you)"
        for suffix in ("-wal", "-shm")
    )


def test_a_lock_directory_loosened_after_the_store_opened_is_still_refused_at_acquire(tmp_path):
    path = tmp_path / "f.db"
    with SQLiteStore(path) as store:
        planted = lock_directory_for(path)
        planted.mkdir()
        planted.chmod(0o777)
        with pytest.raises(UnsafeLockDirectory) as caught:
            store.lock(SPACE, "publish").acquire(timeout=0)
    assert caught.value.exit_code == 2
    assert list(planted.iterdir()) == []

"""SQLiteStore locks: keyed by the database file itself, kept beside it, never planted."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from lib.fabric.lock_files import UnsafeLockDirectory, lock_directory_for
from lib.fabric.publish_lock import PublishLockHeld
from lib.fabric.sqlite_store import SQLiteStore
from lib.fabric.store import open_store
from lib.fabric.store_errors import StoreError
from tests.fabric.holders import hold_lock

SPACE = "did:key:z6MkLockSpace"


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """A store file in a real directory, reachable through a symlinked directory too."""
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    path = real / "fabric.db"
    SQLiteStore(path).close()
    return path


def spellings(tmp_path: Path, database: Path) -> list[str]:
    return [
        f"sqlite:///{database}",  # sqlite:////tmp/... (an extra slash)
        f"sqlite://{database}",
        f"sqlite://{tmp_path}/linked/fabric.db",
        f"sqlite://{tmp_path}/real/../real/./fabric.db",
    ]


def test_every_spelling_of_one_database_file_takes_the_same_lock(tmp_path, database):
    urls = spellings(tmp_path, database)
    stores = [open_store(url) for url in urls]
    try:
        for holder_index, holder in enumerate(stores):
            with holder.lock(SPACE, "publish"):
                for other_index, other in enumerate(stores):
                    if other_index == holder_index:
                        continue
                    with pytest.raises(PublishLockHeld) as caught:
                        other.lock(SPACE, "publish").acquire(timeout=0)
                    assert caught.value.holder["pid"] == os.getpid()
    finally:
        for store in stores:
            store.close()


def test_a_relative_path_takes_the_same_lock_as_the_absolute_one(tmp_path, database, monkeypatch):
    monkeypatch.chdir(tmp_path / "linked")
    relative = SQLiteStore("fabric.db")
    absolute = SQLiteStore(database)
    try:
        with relative.lock(SPACE, "publish"):
            with pytest.raises(PublishLockHeld):
                absolute.lock(SPACE, "publish").acquire(timeout=0)
    finally:
        relative.close()
        absolute.close()


def test_another_process_using_a_symlinked_spelling_excludes_this_one(tmp_path, database):
    linked = f"sqlite://{tmp_path}/linked/fabric.db"
    with hold_lock(linked, SPACE, "publish", "--through-the-symlink") as child:
        store = open_store(f"sqlite:///{database}")
        try:
            with pytest.raises(PublishLockHeld) as caught:
                store.lock(SPACE, "publish").acquire(timeout=0)
        finally:
            store.close()
    assert caught.value.holder["pid"] == child.pid
    assert "--through-the-symlink" in caught.value.message
    assert str(lock_directory_for(database)) in caught.value.message


def test_the_lock_directory_sits_beside_the_database_and_is_private(tmp_path, database, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    store = open_store(f"sqlite://{tmp_path}/linked/fabric.db")
    lock = store.lock(SPACE, "publish")
    assert not lock_directory_for(database).exists()  # making a lock creates nothing
    with lock:
        directory = database.parent / "fabric.db.locks"
        assert lock.directory == directory
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
        files = sorted(directory.iterdir())
        assert [p.suffix for p in files] == [".holder", ".lock"]
        for path in files:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert json.loads(lock.holder_path.read_text())["pid"] == os.getpid()
    store.close()
    assert not (tmp_path / "tmp").exists() and not (tmp_path / "run").exists()


def test_a_lock_directory_planted_as_a_symlink_is_refused_and_nothing_is_written_through_it(
    tmp_path, database
):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    lock_directory_for(database).symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UnsafeLockDirectory) as caught, SQLiteStore(database) as store:
        store.lock(SPACE, "publish").acquire(timeout=0)
    assert caught.value.code == "unsafe-lock-directory"
    assert str(lock_directory_for(database)) in caught.value.message
    assert "symbolic link" in caught.value.message and "remove it" in caught.value.message
    assert list(elsewhere.iterdir()) == []


def test_a_lock_directory_others_can_write_is_refused_and_left_untouched(database):
    planted = lock_directory_for(database)
    planted.mkdir()
    planted.chmod(0o777)  # mkdir's mode is subject to the umask
    with pytest.raises(UnsafeLockDirectory) as caught, SQLiteStore(database) as store:
        store.lock(SPACE, "publish").acquire(timeout=0)
    assert "writable by group or others" in caught.value.message
    assert isinstance(caught.value, StoreError)
    assert list(planted.iterdir()) == []
    assert stat.S_IMODE(planted.stat().st_mode) == 0o777


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a directory to another user")
def test_a_lock_directory_owned_by_another_user_is_refused(database):
    planted = lock_directory_for(database)
    planted.mkdir(mode=0o700)
    os.chown(planted, 4242, 4242)
    with pytest.raises(UnsafeLockDirectory) as caught, SQLiteStore(database) as store:
        store.lock(SPACE, "publish").acquire(timeout=0)
    assert "belongs to uid 4242" in caught.value.message
    assert list(planted.iterdir()) == []


def test_a_lock_directory_that_is_a_file_is_refused(database):
    lock_directory_for(database).write_text("not a directory")
    with pytest.raises(UnsafeLockDirectory) as caught, SQLiteStore(database) as store:
        store.lock(SPACE, "publish").acquire(timeout=0)
    assert "not a directory" in caught.value.message


def test_a_symlink_planted_at_the_holder_note_is_replaced_not_followed(tmp_path, database):
    victim = tmp_path / "victim.json"
    victim.write_text(json.dumps({"pid": 1, "hostname": "planted", "command": "planted"}))
    with SQLiteStore(database) as store:
        lock = store.lock(SPACE, "publish")
        with lock:  # makes the private directory
            pass
        lock.holder_path.symlink_to(victim)
        assert lock.read_holder() is None  # a waiter does not read through it either
        with lock:
            assert not lock.holder_path.is_symlink()
            assert lock.read_holder()["pid"] == os.getpid()
        assert json.loads(victim.read_text())["hostname"] == "planted"
        assert not lock.holder_path.exists()


def test_a_symlink_planted_at_the_lock_file_is_refused_and_not_followed(tmp_path, database):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    mode = stat.S_IMODE(victim.stat().st_mode)
    with SQLiteStore(database) as store:
        lock = store.lock(SPACE, "publish")
        with lock:
            pass
        lock.path.unlink()
        lock.path.symlink_to(victim)
        with pytest.raises(UnsafeLockDirectory) as caught:
            lock.acquire(timeout=0)
        assert lock.path.name in caught.value.message
        assert not lock.held
    assert victim.read_text() == "keep me"
    assert stat.S_IMODE(victim.stat().st_mode) == mode


def test_an_in_memory_store_keeps_its_locks_in_the_process():
    with open_store("sqlite:///:memory:") as store:
        with store.lock(SPACE, "publish"):
            with pytest.raises(PublishLockHeld) as caught:
                store.lock(SPACE, "publish").acquire(timeout=0)
            assert caught.value.holder["pid"] == os.getpid()
        with open_store("sqlite:///:memory:") as other, other.lock(SPACE, "publish", timeout=0):
            pass  # another in-memory store is another database

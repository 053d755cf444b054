"""The SQLite store's files on disk, private: the database file, its -wal and -shm
files and its lock directory, created private or checked when the store is opened
(private_paths.py says how; lock_files.py how the lock directory is checked)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from lib.fabric.lock_files import ensure_private_directory as ensure_lock_directory
from lib.fabric.lock_files import lock_directory_for
from lib.fabric.private_paths import Notice, check_private, create_private_file
from lib.fabric.store_errors import StoreError

_FIX = "agentctl keeps its store only in a regular file of your own: move it away, or choose another with --store"


def private_database_files(path: Path, notice: Notice | None) -> None:
    """Create the database file (and its directory) mode 0600 before SQLite opens it,
    since SQLite gives its -wal and -shm files the database file's mode; or check the
    file there (refused when planted, tightened when loose), its -wal and -shm files
    and, when it exists, its lock directory."""
    try:
        create_private_file(path, what="store file", fix=_FIX, code="unsafe-store-file", notice=notice)
    except OSError as exc:
        raise StoreError("store-unavailable", f"cannot create store {path}: {exc.strerror}") from None
    for companion in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(FileNotFoundError):
            check_private(companion, what="store file", fix=_FIX, code="unsafe-store-file",
                          notice=notice, directory=False)
    lock_directory = lock_directory_for(path)
    if os.path.lexists(lock_directory):
        ensure_lock_directory(lock_directory)

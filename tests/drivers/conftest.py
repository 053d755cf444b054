"""Fixtures for driver tests: the pinned real Codex binary and fixture Codex homes."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lib.drivers.jsonrpc_transport import JsonRpcTransport

ROOT = Path(__file__).resolve().parents[2]
NATIVE_CODEX = ROOT / "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
LAUNCHER_CODEX = ROOT / "node_modules/.bin/codex"


@pytest.fixture(scope="session")
def codex_bin() -> str:
    """The pinned codex program: the native binary (no node in between) when present."""
    for candidate in (NATIVE_CODEX, LAUNCHER_CODEX):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    pytest.fail(f"the pinned codex program is missing ({NATIVE_CODEX}): run make install")


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temporary directory with a short path (a unix socket path must stay under 108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="cx"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def transport() -> Iterator[JsonRpcTransport]:
    """A JSON-RPC transport with the default limits, stopped after the test (a test
    module that needs other limits defines its own)."""
    transport = JsonRpcTransport(name="fake child")
    try:
        yield transport
    finally:
        transport.stop()

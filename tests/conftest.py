"""Fixtures shared by every test directory: a throwaway PostgreSQL server.

One server per test session, started on first use (tests/support/postgres_server.py)
and stopped at exit, failed tests or not; each test that asks gets its own database.
Where PostgreSQL's server programs are not installed the tests that need them are
skipped with the reason, except under CI (CI=true), where that is a failure: CI has
PostgreSQL 15, so these tests always run there.
"""

from __future__ import annotations

import os

import pytest

from tests.support.postgres_server import PostgresServer, postgres_bindir


@pytest.fixture(scope="session")
def postgres_server():
    if postgres_bindir() is None:
        message = "PostgreSQL's server programs are not installed (apt-get install postgresql)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    server = PostgresServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """The URL of a new, empty database on the session's server."""
    return postgres_server.create_database()

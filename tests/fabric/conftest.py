"""Fixtures shared by the store's tests."""

from __future__ import annotations

import sqlite3

import pytest


@pytest.fixture
def traced(monkeypatch):
    """Every SQL statement the SQLite store's connections run from here on, as SQLite
    saw it (a test may clear the list to start counting later)."""
    statements: list[str] = []
    connect = sqlite3.connect

    def traced_connect(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced_connect)
    return statements

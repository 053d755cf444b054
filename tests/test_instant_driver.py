"""The benchmarks' instant driver: a read parses and validates the session's JSON, as a
real driver builds its snapshot, and returns a fresh snapshot equal to the scripted
driver's, every time; a session a command changed reads as it is now."""

from __future__ import annotations

import pytest

from lib.drivers.base import DriverError
from tests.bench.instant_driver import InstantDriver
from tests.support.scripted_driver import ScriptedDriver
from tests.support.sessions import make_snapshot


def _drivers() -> tuple[InstantDriver, ScriptedDriver]:
    return (InstantDriver(source_id="scripted", snapshots=[make_snapshot(s) for s in ("s1", "s2")]),
            ScriptedDriver(source_id="scripted", snapshots=[make_snapshot(s) for s in ("s1", "s2")]))


def test_a_read_is_a_fresh_snapshot_equal_to_the_scripted_drivers():
    instant, scripted = _drivers()
    first, second = instant.read_session("s1"), instant.read_session("s1")
    assert first == second == scripted.read_session("s1")
    assert first is not second and first.events is not second.events
    first.events.clear()  # what preparation does with consume=True
    assert instant.read_session("s1") == scripted.read_session("s1")
    assert [c[0] for c in instant.calls_of("read")] == ["read", "read", "read"]


def test_a_renamed_session_reads_with_its_new_title_and_a_missing_one_fails_as_before():
    instant, _ = _drivers()
    assert instant.read_session("s2").summary.title is None
    assert instant.rename_session("s2", "new title").status == "succeeded"
    assert instant.read_session("s2").summary.title == "new title"
    with pytest.raises(DriverError) as caught:
        instant.read_session("nope")
    assert caught.value.code == "session-not-found"

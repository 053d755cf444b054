"""Read-ahead in the sync path: the next session is read while this one goes on, one
ahead and no more. Driven by the scripted driver, whose gates hold a read open (a real
provider cannot be paused mid-read), hence `fake` in the names."""

from __future__ import annotations

from lib.drivers.base import DriverError
from lib.git_context import GitContextResolver
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.listing import list_source
from lib.pipeline.read_ahead import ReadAhead
from lib.pipeline.read_stage import ReadSession, ReadStage
from lib.pipeline.records import data_of, kind_of
from tests.fabric.target_helpers import snapshot
from tests.support.scripted_driver import ScriptedDriver


class RetainOnly:
    """A retain rule that keeps the named sessions unread."""

    def __init__(self, *session_ids: str) -> None:
        self.ids = set(session_ids)

    def for_source(self, _source_id: str):  # noqa: ANN201
        return lambda summary: summary.native_session_id in self.ids


def stage_over(driver: ScriptedDriver, ahead: ReadAhead, retain: RetainOnly | None = None):
    pool = DriverPool(lambda _source: driver)
    stage = ReadStage(pool, GitContextResolver().begin_observation(), retain=retain, read_ahead=ahead)  # type: ignore[arg-type]
    return pool, stage


def handle_until_first_read(stage: ReadStage, ahead: ReadAhead, driver: ScriptedDriver) -> None:
    """Feed the listing to the stage until it has read its first session (the reads after
    it queued or begun, as the read-ahead decides)."""
    for item in ahead.feed(list_source(driver)):
        if any(isinstance(out, ReadSession) for out in list(stage.handle(item))):
            return


def run_all(stage: ReadStage, ahead: ReadAhead, driver: ScriptedDriver) -> list:
    out = []
    for item in ahead.feed(list_source(driver)):
        out.extend(stage.handle(item))
    out.extend(stage.finish())
    return out


def test_the_next_session_is_read_while_this_one_is_still_being_handled_fake(tmp_path) -> None:
    driver = ScriptedDriver(source_id="codex", snapshots=[snapshot("s1"), snapshot("s2"), snapshot("s3")])
    ahead = ReadAhead()
    pool, stage = stage_over(driver, ahead)
    gate = driver.gate("read", "s2")
    items = ahead.feed(list_source(driver))
    seen: list = []
    for item in items:
        for out in stage.handle(item):
            seen.append(out)
            if isinstance(out, ReadSession) and out.snapshot.summary.native_session_id == "s1":
                # s1 is not yet prepared or published (we hold it), and s2's read has begun
                gate.wait_reached()
                assert ("read", "s3") not in driver.calls, "one session ahead, no more"
                gate.open()
    seen.extend(stage.finish())
    stage.close()
    pool.close()
    read = [out.snapshot.summary.native_session_id for out in seen if isinstance(out, ReadSession)]
    assert read == ["s1", "s2", "s3"]
    assert driver.calls_of("read") == [("read", "s1"), ("read", "s2"), ("read", "s3")], "each read once"
    assert (ahead.started, ahead.used) == (2, 2)
    (outcome,) = [out for out in seen if kind_of(out) == "outcome"]
    assert outcome["complete"] is True and outcome["read"] == 3


def test_a_session_the_retain_rule_keeps_is_not_read_ahead_fake(tmp_path) -> None:
    driver = ScriptedDriver(source_id="codex", snapshots=[snapshot("s1"), snapshot("s2"), snapshot("s3")])
    ahead = ReadAhead()
    pool, stage = stage_over(driver, ahead, RetainOnly("s2"))
    out = run_all(stage, ahead, driver)
    stage.close()
    pool.close()
    assert driver.calls_of("read") == [("read", "s1"), ("read", "s3")]
    assert [data_of(o)["summary"]["nativeSessionId"] for o in out if kind_of(o) == "retained"] == ["s2"]
    assert [o.snapshot.summary.native_session_id for o in out if isinstance(o, ReadSession)] == ["s1", "s3"]


def test_a_read_ahead_that_fails_is_that_sessions_read_error_and_the_rest_go_on_fake(tmp_path) -> None:
    driver = ScriptedDriver(
        source_id="codex", snapshots=[snapshot("s1"), snapshot("s2"), snapshot("s3")],
        read_faults={"s2": DriverError("read-failed", "s2 cannot be read")},
    )
    ahead = ReadAhead()
    pool, stage = stage_over(driver, ahead)
    out = run_all(stage, ahead, driver)
    stage.close()
    pool.close()
    errors = [o for o in out if kind_of(o) == "error"]
    assert [(e["nativeSessionId"], e["code"], e["stage"]) for e in errors] == [("s2", "read-failed", "read")]
    assert [o.snapshot.summary.native_session_id for o in out if isinstance(o, ReadSession)] == ["s1", "s3"]
    (outcome,) = [o for o in out if kind_of(o) == "outcome"]
    assert outcome["complete"] is False and outcome["inventoryComplete"] is True
    assert ahead.used == 2  # s2's failure and s3 were both taken from reads begun ahead

"""Read-ahead several sessions deep (session 22): the reads after the one the read stage
holds run back to back, one at a time, up to `depth` not yet taken and within a budget
of answer bytes. Driven by the scripted driver, whose gates hold a read open (a real
provider cannot be paused mid-read), hence `fake` in the names."""

from __future__ import annotations

from lib.drivers.base import DriverError
from lib.pipeline.listing import list_source
from lib.pipeline.read_ahead import ReadAhead
from lib.pipeline.read_stage import ReadSession
from lib.pipeline.records import kind_of
from lib.types import NativeSessionSnapshot
from tests.fabric.target_helpers import snapshot
from tests.pipeline.test_read_ahead import handle_until_first_read, stage_over
from tests.support.scripted_driver import GATE_GUARD_SECONDS, ScriptedDriver


class SizedDriver(ScriptedDriver):
    """A scripted driver that tells each answer's size, as the Codex driver does."""

    def __init__(self, *args, answer_bytes: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.answer_bytes = answer_bytes

    def read_session_sized(self, native_session_id: str) -> tuple[NativeSessionSnapshot, int]:
        return self.read_session(native_session_id), self.answer_bytes


def sessions(count: int) -> list[NativeSessionSnapshot]:
    return [snapshot(f"s{n}") for n in range(1, count + 1)]


def run_holding(ahead: ReadAhead, driver: ScriptedDriver, held: str, while_held) -> list:
    """Every item of a read stage over `driver`; `while_held()` runs while the snapshot of
    session `held` is still with us (not prepared, not published)."""
    pool, stage = stage_over(driver, ahead)
    seen: list = []
    try:
        for item in ahead.feed(list_source(driver)):
            for out in stage.handle(item):
                seen.append(out)
                if isinstance(out, ReadSession) and out.snapshot.summary.native_session_id == held:
                    while_held()
        seen.extend(stage.finish())
    finally:
        stage.close()
        pool.close()
    return seen


def read_ids(seen: list) -> list[str]:
    return [out.snapshot.summary.native_session_id for out in seen if isinstance(out, ReadSession)]


def test_the_reads_after_the_held_session_run_back_to_back_up_to_the_depth_fake() -> None:
    driver = SizedDriver(source_id="codex", snapshots=sessions(7), answer_bytes=1000)
    ahead = ReadAhead(depth=3, budget=1 << 20)
    gate = driver.gate("read", "s4")

    def while_held() -> None:
        # s1 is still ours; s2 and s3 were read one after the other and s4's read has begun
        gate.wait_reached()
        assert driver.calls_of("read")[:4] == [("read", "s1"), ("read", "s2"), ("read", "s3"), ("read", "s4")]
        assert ("read", "s5") not in driver.calls, "at most `depth` reads not yet taken"
        gate.open()

    seen = run_holding(ahead, driver, "s1", while_held)
    assert read_ids(seen) == ["s1", "s2", "s3", "s4", "s5", "s6", "s7"]
    assert driver.calls_of("read") == [("read", f"s{n}") for n in range(1, 8)], "each read once, in order"
    assert (ahead.started, ahead.used) == (6, 6)
    assert ahead.most_pending == 3
    (outcome,) = [out for out in seen if kind_of(out) == "outcome"]
    assert outcome["complete"] is True and outcome["read"] == 7


def test_answers_held_up_to_the_byte_budget_stop_the_next_read_until_one_is_taken_fake() -> None:
    driver = SizedDriver(source_id="codex", snapshots=sessions(5), answer_bytes=600)
    ahead = ReadAhead(depth=4, budget=1000)  # s2's answer fits, s2 + s3's reach the budget

    def while_held() -> None:
        room = ahead.waiting_for_room()
        assert room is not None
        assert room.wait(GATE_GUARD_SECONDS), "the read after the budget never waited for room"
        # s2 and s3 are held (1,200 bytes >= 1,000): s4 waits for the read stage to take one
        assert driver.calls_of("read") == [("read", "s1"), ("read", "s2"), ("read", "s3")]

    seen = run_holding(ahead, driver, "s1", while_held)
    assert read_ids(seen) == ["s1", "s2", "s3", "s4", "s5"]
    assert driver.calls_of("read") == [("read", f"s{n}") for n in range(1, 6)]


def test_a_driver_that_cannot_tell_its_answer_size_is_read_one_session_ahead_fake() -> None:
    driver = ScriptedDriver(source_id="codex", snapshots=sessions(4))
    ahead = ReadAhead(depth=4)

    def while_held() -> None:
        room = ahead.waiting_for_room()
        assert room is not None and room.wait(GATE_GUARD_SECONDS)
        assert driver.calls_of("read") == [("read", "s1"), ("read", "s2")]

    seen = run_holding(ahead, driver, "s1", while_held)
    assert read_ids(seen) == ["s1", "s2", "s3", "s4"]


def test_a_failed_read_begun_ahead_is_reported_in_its_own_place_and_the_later_ones_go_on_fake() -> None:
    driver = SizedDriver(source_id="codex", snapshots=sessions(5), answer_bytes=10,
                         read_faults={"s3": DriverError("read-failed", "s3 cannot be read")})
    ahead = ReadAhead(depth=4, budget=1 << 20)
    gate = driver.gate("read", "s5")

    def while_held() -> None:
        gate.wait_reached()  # s3 failed and s4 was read behind it while s1 was held
        gate.open()

    seen = run_holding(ahead, driver, "s1", while_held)
    order = [("error", out["nativeSessionId"], out["code"]) if kind_of(out) == "error"
             else ("read", out.snapshot.summary.native_session_id) for out in seen
             if kind_of(out) == "error" or isinstance(out, ReadSession)]
    assert order == [("read", "s1"), ("read", "s2"), ("error", "s3", "read-failed"), ("read", "s4"), ("read", "s5")]
    (outcome,) = [out for out in seen if kind_of(out) == "outcome"]
    assert outcome["complete"] is False and outcome["read"] == 4
    assert ahead.used == 4  # s2, s3's failure, s4 and s5 all came from reads begun ahead


def test_a_read_of_a_session_out_of_order_drops_the_queued_reads_and_reads_directly_fake() -> None:
    driver = SizedDriver(source_id="codex", snapshots=sessions(4), answer_bytes=10)
    ahead = ReadAhead(depth=3, budget=1 << 20)
    pool, stage = stage_over(driver, ahead)
    try:
        handle_until_first_read(stage, ahead, driver)  # s1 read; s2..s4 queued behind it
        reader = ahead.reader("codex", driver)
        assert reader.read_session("s4").summary.native_session_id == "s4"  # out of order
        assert ahead.take("codex", "s2") is None, "the queued reads were dropped"
    finally:
        stage.close()
        pool.close()
    reads = driver.calls_of("read")
    assert reads[0] == ("read", "s1") and reads[-1] == ("read", "s4")  # s4's direct read came last

"""Reads in flight together (session 25): a driver that can ask for a read before it waits
for the answer (`begin_read_session_sized`, the Codex driver's) has up to `window` reads
of told size asked at once, their answers taken in the read stage's order; a read of
unknown size runs alone, and the told sizes stay within the byte budget. Driven by the
scripted driver, whose gates hold a read open (a real provider cannot be paused
mid-read), hence `fake` in the names; tests/drivers/test_codex_driver.py asks real Codex
for several reads at once."""

from __future__ import annotations

from lib.pipeline.read_ahead import ReadAhead
from lib.pipeline.records import kind_of
from lib.types import NativeSessionSnapshot, SessionSummary
from tests.pipeline.test_read_ahead import handle_until_first_read, stage_over
from tests.pipeline.test_read_ahead_depth import SizedDriver, read_ids, run_holding, sessions


class AskingDriver(SizedDriver):
    """A sized scripted driver that asks for a read first and answers it when waited for:
    `asked` lists the reads asked, gate ("ask", id) holds the asking, ("read", id) the answer."""

    def __init__(self, *args, told: dict[str, int | None] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.told = told or {}
        self.asked: list[str] = []

    def read_size_hint(self, summary: SessionSummary) -> int | None:
        return self.told.get(summary.native_session_id, 100)

    def begin_read_session_sized(self, native_session_id: str):
        self._enter("ask", native_session_id)
        self.asked.append(native_session_id)
        return lambda: self.read_session_sized(native_session_id)

    def read_session_sized(self, native_session_id: str) -> tuple[NativeSessionSnapshot, int]:
        return self.read_session(native_session_id), self.answer_bytes


def hold_second_answer(driver: AskingDriver):
    """A `while_held` that lets the worker ask for s2 once every read is queued, then holds
    s2's answer; it returns the reads asked while that answer was held."""
    ask, answer = driver.gate("ask", "s2"), driver.gate("read", "s2")
    asked: list[str] = []

    def while_held() -> None:
        ask.wait_reached()
        ask.open()
        answer.wait_reached()
        asked.extend(driver.asked)
        answer.open()

    return while_held, asked


def test_reads_of_told_size_are_asked_together_up_to_the_window_fake() -> None:
    driver = AskingDriver(source_id="codex", snapshots=sessions(9), answer_bytes=100)
    ahead = ReadAhead(depth=8, budget=1 << 20, window=4)
    while_held, asked = hold_second_answer(driver)

    seen = run_holding(ahead, driver, "s1", while_held)
    assert asked == ["s2", "s3", "s4", "s5"], "four reads in flight while the oldest is answered, no more"
    assert read_ids(seen) == [f"s{n}" for n in range(1, 10)], "taken in the read stage's order"
    assert driver.calls_of("read") == [("read", f"s{n}") for n in range(1, 10)], "each answered once, in order"
    (outcome,) = [out for out in seen if kind_of(out) == "outcome"]
    assert outcome["complete"] is True and outcome["read"] == 9


def test_a_read_of_unknown_size_is_asked_alone_fake() -> None:
    driver = AskingDriver(source_id="codex", snapshots=sessions(6), answer_bytes=100, told={"s3": None})
    ahead = ReadAhead(depth=8, budget=1 << 20, window=4)
    while_held, asked = hold_second_answer(driver)

    seen = run_holding(ahead, driver, "s1", while_held)
    assert asked == ["s2"], "s3's size is not told: it waits for s2's answer, and s4 waits behind it"
    assert read_ids(seen) == [f"s{n}" for n in range(1, 7)]


def test_told_sizes_in_flight_stay_within_the_byte_budget_fake() -> None:
    driver = AskingDriver(source_id="codex", snapshots=sessions(6), answer_bytes=100)
    ahead = ReadAhead(depth=8, budget=250, window=4)  # two told sizes of 100 fit, a third does not
    while_held, asked = hold_second_answer(driver)

    seen = run_holding(ahead, driver, "s1", while_held)
    assert asked == ["s2", "s3"]
    assert read_ids(seen) == [f"s{n}" for n in range(1, 7)]


def test_a_window_of_one_asks_each_read_after_the_one_before_is_answered_fake() -> None:
    driver = AskingDriver(source_id="codex", snapshots=sessions(5), answer_bytes=100)
    ahead = ReadAhead(depth=8, budget=1 << 20, window=1)
    while_held, asked = hold_second_answer(driver)

    seen = run_holding(ahead, driver, "s1", while_held)
    assert asked == ["s2"]
    assert read_ids(seen) == [f"s{n}" for n in range(1, 6)]


def test_a_read_out_of_order_waits_out_the_reads_in_flight_fake() -> None:
    driver = AskingDriver(source_id="codex", snapshots=sessions(6), answer_bytes=100)
    ahead = ReadAhead(depth=8, budget=1 << 20, window=4)
    pool, stage = stage_over(driver, ahead)
    try:
        handle_until_first_read(stage, ahead, driver)  # s1 read; s2..s6 queued, some asked
        reader = ahead.reader("codex", driver)
        assert reader.read_session("s6").summary.native_session_id == "s6"  # out of order
        assert ahead.take("codex", "s2") is None, "the queued reads were dropped"
    finally:
        stage.close()
        pool.close()
    answered = driver.calls_of("read")
    assert answered[-1] == ("read", "s6"), "every read asked was answered before the direct one"
    assert [("read", sid) for sid in driver.asked] == answered[1:-1]

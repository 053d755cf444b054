"""A large session read early (session 24): a driver that tells how large a read will be
(`read_size_hint`, the Codex driver's rollout size) has the first large session within
the horizon read at once on a thread of its own, beside the reads in order; one at a
time, the next only once the session read early is published. Driven by the scripted
driver, whose gates hold a read open (a real provider cannot be paused mid-read), hence
`fake` in the names."""

from __future__ import annotations

from lib.pipeline.read_ahead import ReadAhead
from lib.pipeline.records import kind_of
from lib.types import SessionSummary
from tests.pipeline.test_read_ahead import handle_until_first_read, stage_over
from tests.pipeline.test_read_ahead_depth import SizedDriver, read_ids, run_holding, sessions


class HintedDriver(SizedDriver):
    """A sized scripted driver that tells which sessions' reads are large."""

    def __init__(self, *args, large: set[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.large = large
        self.hinted: list[str] = []

    def read_size_hint(self, summary: SessionSummary) -> int | None:
        self.hinted.append(summary.native_session_id)
        return 1000 if summary.native_session_id in self.large else 10


def test_a_large_session_past_the_depth_is_read_early_beside_the_reads_in_order_fake() -> None:
    driver = HintedDriver(source_id="codex", snapshots=sessions(10), answer_bytes=10, large={"s7"})
    ahead = ReadAhead(depth=2, budget=1 << 20, early_bytes=1000)
    early = driver.gate("read", "s7")

    def while_held() -> None:
        # s3 is ours and at most s4 and s5 are queued in order: s7 is read only because it is large
        early.wait_reached()
        assert ("read", "s6") not in driver.calls, "the reads in order go no further than the depth"
        early.open()

    seen = run_holding(ahead, driver, "s3", while_held)
    assert read_ids(seen) == [f"s{n}" for n in range(1, 11)], "the read stage's order is kept"
    assert sorted(driver.calls_of("read")) == sorted(("read", f"s{n}") for n in range(1, 11)), "each read once"
    assert ahead.early_started == 1
    (outcome,) = [out for out in seen if kind_of(out) == "outcome"]
    assert outcome["complete"] is True and outcome["read"] == 10


def test_the_next_large_session_is_read_early_only_once_the_one_before_is_published_fake() -> None:
    driver = HintedDriver(source_id="codex", snapshots=sessions(8), answer_bytes=10, large={"s3", "s5"})
    ahead = ReadAhead(depth=4, budget=1 << 20, early_bytes=1000)

    def while_held() -> None:
        # s3 (read early) is being published: s5, large too, is not read yet, and the
        # reads in order stop before it (s4 only)
        assert ("read", "s5") not in driver.calls
        assert ("read", "s6") not in driver.calls

    seen = run_holding(ahead, driver, "s3", while_held)
    assert read_ids(seen) == [f"s{n}" for n in range(1, 9)]
    assert sorted(driver.calls_of("read")) == sorted(("read", f"s{n}") for n in range(1, 9))
    assert ahead.early_started == 2


def test_a_driver_without_a_size_hint_reads_nothing_early_fake() -> None:
    driver = SizedDriver(source_id="codex", snapshots=sessions(6), answer_bytes=10)
    ahead = ReadAhead(depth=2, budget=1 << 20, early_bytes=1)
    seen = run_holding(ahead, driver, "s1", lambda: None)
    assert read_ids(seen) == [f"s{n}" for n in range(1, 7)]
    assert driver.calls_of("read") == [("read", f"s{n}") for n in range(1, 7)]
    assert ahead.early_started == 0


def test_a_read_out_of_order_drops_the_early_read_too_fake() -> None:
    driver = HintedDriver(source_id="codex", snapshots=sessions(6), answer_bytes=10, large={"s4"})
    ahead = ReadAhead(depth=4, budget=1 << 20, early_bytes=1000)
    pool, stage = stage_over(driver, ahead)
    try:
        handle_until_first_read(stage, ahead, driver)  # s1 read; s2, s3 queued in order, s4 begun early
        assert ahead.early_started == 1
        reader = ahead.reader("codex", driver)
        assert reader.read_session("s6").summary.native_session_id == "s6"  # out of order
        assert ahead.take("codex", "s4") is None, "the early read was dropped with the queued ones"
    finally:
        stage.close()
        pool.close()

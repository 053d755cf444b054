"""Records held until a later step go to a spill file, not memory (issue 14 goal 4):
they come back in order and whole, and the holder does not grow with their number."""

from __future__ import annotations

import os
import stat
import tracemalloc

from lib.record_spill import RecordSpill


def test_records_come_back_in_the_order_added_and_again_until_cleared():
    spill = RecordSpill()
    assert list(spill) == [] and len(spill) == 0
    records = [(f"codex/s{i}", "written" if i % 2 else "unchanged", None if i % 3 else "complete") for i in range(500)]
    records.append(("codex/é \u2028 x", "retained", "partial"))
    for record in records:
        spill.add(record)
    assert len(spill) == len(records)
    assert list(spill) == records
    spill.add(("codex/late", "written", "complete"))  # added after a read: still in order
    assert list(spill) == [*records, ("codex/late", "written", "complete")]
    spill.clear()
    assert list(spill) == [] and len(spill) == 0


def test_the_spill_file_is_private_and_unlinked():
    spill = RecordSpill()
    spill.add(("codex/a", "written", "complete"))
    assert spill._file is not None
    mode = os.fstat(spill._file.fileno())
    assert stat.S_IMODE(mode.st_mode) == 0o600
    assert mode.st_nlink == 0  # no name in the file system: gone with the process
    spill.clear()


def test_the_holder_does_not_grow_with_the_records_it_holds():
    def held_after(count: int) -> int:
        spill = RecordSpill()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(count):
                spill.add((f"codex/{i:036d}", "written", "complete"))
            return tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
            spill.clear()

    small, large = held_after(2_000), held_after(40_000)
    # a list of these tuples holds about 150 bytes a record: 40,000 would be ~6 MB
    assert large < 256 * 1024
    assert large - small < 64 * 1024

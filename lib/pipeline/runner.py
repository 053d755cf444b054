"""Running a stage: items in, the stage's records out to a sink."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from lib.memory_release import map_large_allocations
from lib.pipeline.records import Item, RecordSink

Progress = Callable[[Iterable[Item], str], Iterable[Item]]


class Stage(Protocol):
    stage: str

    def handle(self, item: Item) -> Iterator[Item]: ...

    def finish(self) -> Iterator[Item]: ...

    def close(self) -> None: ...


def run_stage(
    stage: Stage,
    inputs: Iterable[Item],
    sink: RecordSink,
    *,
    progress: Progress | None = None,
    description: str | None = None,
) -> RecordSink:
    """Feed `inputs` through `stage` into `sink`, then the stage's final records; the
    stage is closed however the run ends (an unfinished publication commits nothing)."""
    map_large_allocations()  # a large buffer never left in the heap (memory_release.py)
    try:
        items = progress(inputs, description or stage.stage) if progress is not None else inputs
        item = out = None
        for item in items:
            for out in stage.handle(item):
                sink.put(out)
        # the last records (a source's outcome, its listed ids) are not held through the
        # stage's finish, where `sync` commits its index (issue 14 goal 4)
        del item, out
        for out in stage.finish():
            sink.put(out)
    finally:
        stage.close()
    return sink

"""The list stage: one source's inventory as records, without reading a session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lib.drivers.base import AgentDriver
from lib.pipeline.records import SummaryItem, collection_error_record, source_record
from lib.reconcile import SignalSource, stream_source


def list_source(
    driver: AgentDriver,
    observation_sequence: int | None = None,
    observation_origin: str | None = None,
    *,
    signal: SignalSource = None,
) -> Iterator[dict[str, Any]]:
    """`agentctl list`: the source record, every summary, then the inventory outcome
    (the source record again before it when listing changed the source's capabilities)."""
    first = source_record(driver.source, observation_sequence, observation_origin)
    yield first
    # The inventory rules (repeated cursors, repeats, the listing limit) live in the
    # collection stream; retaining every summary walks the inventory without reading.
    # Each summary leaves with its item: the stream keeps none (memory flat in sessions).
    stream = stream_source(driver, signal, retain=lambda _summary: True, keep_retained=False)
    for item in stream:
        if item.kind == "retained" and item.summary is not None:
            yield SummaryItem("summary", driver.source.id, item.summary)  # a record when it leaves
        elif item.error is not None:
            yield collection_error_record("list", item.error)
    if driver.source.to_wire()["capabilities"] != first["source"]["capabilities"]:
        # The listing changed what the driver publishes (ACP: a complete inventory drops
        # the controls of sessions it no longer lists): the source record again.
        yield source_record(driver.source, observation_sequence, observation_origin)
    outcome = stream.outcome.to_wire()
    # the ids as the stream's own table, not a list: down the stages to the publication,
    # which keeps them as one (sinks write them as the JSON list: records.json_pieces)
    outcome.update(retained=0, complete=False, listedSessionIds=stream.listed_ids)
    yield {"record": "outcome", "stage": "list", **outcome}

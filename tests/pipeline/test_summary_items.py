"""Summaries handed between stages in one process as their models (records.SummaryItem):
the same records when they leave the process, the same reads and retains as the records
read from a stream. Driven by the scripted driver (a listing with exact summaries)."""

from __future__ import annotations

import json

from lib.pipeline.listing import list_source
from lib.pipeline.read_ahead import ReadAhead
from lib.pipeline.records import (
    SummaryItem,
    data_of,
    json_pieces,
    kind_of,
    summary_record,
    to_json_line,
)
from tests.fabric.target_helpers import snapshot
from tests.pipeline.test_read_ahead import RetainOnly, stage_over
from tests.support.scripted_driver import ScriptedDriver


def _driver() -> ScriptedDriver:
    return ScriptedDriver(source_id="codex", snapshots=[snapshot("s1"), snapshot("s2"), snapshot("s3")])


def test_a_listed_summary_leaves_the_process_as_the_summary_record_fake() -> None:
    driver = _driver()
    items = [item for item in list_source(driver) if kind_of(item) == "summary"]
    assert [type(item) for item in items] == [SummaryItem] * 3
    listed = {s.native_session_id: s for s in driver.list_sessions().sessions}
    for item in items:
        expected = summary_record("summary", "codex", listed[item.summary.native_session_id])
        assert data_of(item) == expected
        assert to_json_line(data_of(item)) == to_json_line(expected)


def _run(driver: ScriptedDriver, items: list, retain: RetainOnly) -> list:
    ahead = ReadAhead()
    pool, stage = stage_over(driver, ahead, retain)
    out = []
    try:
        for item in ahead.feed(items):
            out.extend(stage.handle(item))
        out.extend(stage.finish())
    finally:
        stage.close()
        pool.close()
    return out


def test_models_and_records_read_and_retain_the_same_sessions_fake() -> None:
    as_models = _run(driver := _driver(), list(list_source(driver)), RetainOnly("s2"))
    as_records = _run(driver := _driver(), [json.loads(to_json_line(data_of(i))) for i in list_source(driver)],
                      RetainOnly("s2"))
    retained = [i for i in as_models if kind_of(i) == "retained"]
    assert [type(i) for i in retained] == [SummaryItem]
    assert [data_of(i) for i in retained] == [data_of(i) for i in as_records if kind_of(i) == "retained"]
    assert [kind_of(i) for i in as_models] == [kind_of(i) for i in as_records]
    read = [i.snapshot.summary.native_session_id for i in as_models if kind_of(i) == "snapshot"]
    assert read == ["s1", "s3"]


def test_the_listed_ids_go_from_the_listing_to_the_read_outcome_as_one_table_fake() -> None:
    """Issue 14 goal 4: the list stage's outcome record carries the collection's own
    table of listed ids (a KeyTable), and the read stage's outcome record the very same
    table, not a list of a string an id (with a second table made of it by the
    publication, 25,000 ids were the listing idle sync's peak); the records written to a
    stream are the same text as with the list, and a stream's list still reads."""
    from lib.key_table import KeyTable

    driver = _driver()
    listed = list(list_source(driver))
    outcome = data_of(listed[-1])
    table = outcome["listedSessionIds"]
    assert type(table) is KeyTable and list(table) == ["s1", "s2", "s3"]
    read = _run(_driver(), listed, RetainOnly("s2"))
    joined = data_of([i for i in read if kind_of(i) == "outcome"][-1])
    assert joined["listedSessionIds"] is table
    as_list = {**joined, "listedSessionIds": list(table)}
    assert "".join(json_pieces(joined)) == to_json_line(as_list) == to_json_line(joined)
    from_stream = _run(_driver(), [json.loads(to_json_line(data_of(i))) for i in listed], RetainOnly("s2"))
    assert data_of([i for i in from_stream if kind_of(i) == "outcome"][-1])["listedSessionIds"] == ["s1", "s2", "s3"]


def test_a_record_holding_a_table_is_written_in_pieces_as_the_same_text() -> None:
    """`json_pieces` writes a KeyTable field a run of strings at a time, and the text is
    byte for byte `to_json_line`'s of the record with a list: field order, an empty
    table, non-ASCII and escaped strings, a run boundary."""
    from lib.key_table import KeyTable
    from lib.pipeline import records

    ids = [f"id-{n}" for n in range(records._IDS_AT_ONCE * 2 + 5)] + ["é\"\\\n", "\u2028"]
    for strings in (ids, [], ["only"]):
        record = {"record": "outcome", "listedSessionIds": KeyTable(strings), "errors": [{"code": "x"}], "n": 1.5}
        expected = to_json_line({**record, "listedSessionIds": strings})
        pieces = list(json_pieces(record))
        assert "".join(pieces) == expected
        assert max(len(piece) for piece in pieces) < records._IDS_AT_ONCE * 12 or not strings
    assert list(json_pieces({"record": "x", "ids": ["a"]})) == [to_json_line({"record": "x", "ids": ["a"]})]

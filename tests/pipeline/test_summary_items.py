"""Summaries handed between stages in one process as their models (records.SummaryItem):
the same records when they leave the process, the same reads and retains as the records
read from a stream. Driven by the scripted driver (a listing with exact summaries)."""

from __future__ import annotations

import json

from lib.pipeline.listing import list_source
from lib.pipeline.read_ahead import ReadAhead
from lib.pipeline.records import SummaryItem, data_of, kind_of, summary_record, to_json_line
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

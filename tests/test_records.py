import io
import json

from lib.pipeline.records import PASSTHROUGH_TEXT_LIMIT, JsonLinesSink, read_records


def read_all(text: str):
    out = io.StringIO()
    writer = JsonLinesSink(out)
    records = list(read_records(io.StringIO(text), "prepare", writer))
    return records, [json.loads(line) for line in out.getvalue().splitlines()], writer


def test_every_bad_line_becomes_one_error_record_naming_its_line_and_the_good_ones_go_through():
    text = '{"record":"source","source":{}}\nnot json\n[1,2]\n{"no":"kind"}\n{"record":"bogus"}\n\n{"record":"summary","sourceId":"codex","summary":{}}\n'
    records, errors, writer = read_all(text)
    assert [r.line for r in records] == [1, 7]
    assert [(e["line"], e["code"], e["stage"]) for e in errors] == [
        (2, "bad-input", "prepare"), (3, "bad-input", "prepare"), (4, "bad-input", "prepare"), (5, "bad-input", "prepare"),
    ]
    assert "line 4: no 'record' field" in errors[2]["message"]
    assert writer.errors == 4


def test_a_short_record_passes_through_byte_for_byte():
    line = '{"record": "outcome",   "stage":"list", "sourceId":"codex"}\n'
    (record,), _, _ = read_all(line)
    out = io.StringIO()
    JsonLinesSink(out).put(record)
    assert out.getvalue() == line


def test_a_long_record_is_not_kept_as_text_and_passes_through_as_equal_json():
    payload = "x" * (PASSTHROUGH_TEXT_LIMIT + 1)
    line = json.dumps({"record": "snapshot", "sourceId": "codex", "snapshot": {}, "blob": payload}) + "\n"
    (record,), _, _ = read_all(line)
    assert record.text is None
    out = io.StringIO()
    JsonLinesSink(out).put(record)
    assert json.loads(out.getvalue()) == json.loads(line)


def test_a_record_whose_own_fields_have_the_wrong_types_is_one_error_naming_its_line():
    text = (
        '{"record":["summary"]}\n'
        '{"record":"error","stage":"read","sourceId":[1],"code":"x","message":"m"}\n'
        '{"record":"summary","sourceId":"  ","summary":{}}\n'
        '{"record":"source","source":{},"observationSequence":true}\n'
        '{"record":"outcome","stage":"list","sourceId":"codex"}\n'
    )
    records, errors, writer = read_all(text)
    assert [r.line for r in records] == [5]
    assert [e["line"] for e in errors] == [1, 2, 3, 4]
    assert "sourceId must be a string or null" in errors[1]["message"]
    assert "must not be blank" in errors[2]["message"]
    assert "observationSequence" in errors[3]["message"]


def test_an_outcome_whose_errors_or_listed_ids_have_another_shape_is_one_error_not_a_crash():
    text = (
        '{"record":"outcome","stage":"read","sourceId":"codex","errors":"0"}\n'
        '{"record":"outcome","stage":"read","sourceId":"codex","errors":true}\n'
        '{"record":"outcome","stage":"read","sourceId":"codex","errors":["x"]}\n'
        '{"record":"outcome","stage":"list","sourceId":"codex","listedSessionIds":[1]}\n'
        '{"record":"outcome","stage":"list","sourceId":"codex","inventoryComplete":"yes"}\n'
        '{"record":"outcome","stage":"list","sourceId":"codex","errors":[{"code":"c"}],"listedSessionIds":["s1"]}\n'
    )
    records, errors, _ = read_all(text)
    assert [r.line for r in records] == [6]
    assert [e["line"] for e in errors] == [1, 2, 3, 4, 5]
    assert "errors must be a list of error objects" in errors[0]["message"]


def test_a_string_holding_unicode_line_separators_stays_in_its_one_record():
    line = json.dumps({"record": "outcome", "stage": "list", "sourceId": "co\u0085dex\u2028x"}, ensure_ascii=False)
    records, errors, _ = read_all(line + "\n" + '{"record":"outcome","stage":"list","sourceId":"b"}\n')
    assert errors == []
    assert [r.data["sourceId"] for r in records] == ["co\u0085dex\u2028x", "b"]

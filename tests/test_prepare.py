"""prepare_session: key, captured views, chunks, snapshot hash, and the prepared record."""

from __future__ import annotations

import io
import json

import pytest

from lib.chunking import chunk_events
from lib.frozen import FrozenDict
from lib.hashing import content_hash
from lib.prepare import PreparedSession, PrepareError, prepare_session, snapshot_hash
from lib.types import NativeSessionSnapshot, NormalizedMessage, SessionSummary
from tests.bench.corpus import SessionGenerator
from tests.support.speedups import implementation  # noqa: F401  (each test: Python, then C)


def _snapshot(**overrides) -> NativeSessionSnapshot:
    data = {
        "summary": SessionSummary(native_session_id=" abc/123 ", title="T", raw={"id": "abc/123"}),
        "events": [{"type": "turn", "id": f"t{i}", "text": "x" * 300, "items": [{"n": i}]} for i in range(20)],
        "normalized_messages": [
            NormalizedMessage(id=f"m{i}", role="user", kind="userMessage", text=f"hi {i}", event_index=i)
            for i in range(3)
        ],
        "revision": "rev-1",
        "complete": True,
    }
    data.update(overrides)
    return NativeSessionSnapshot(**data)


def _record_text(prepared: PreparedSession) -> str:
    out = io.StringIO()
    prepared.write_record(out)
    return out.getvalue()


def test_the_key_and_identity_are_normalized_as_the_spec_says():
    prepared = prepare_session("Codex:Work", _snapshot(), driver="codex-app-server")
    assert prepared.key == "codex%3Awork/abc%2F123"
    assert (prepared.source_id, prepared.native_session_id, prepared.driver) == ("codex:work", "abc/123", "codex-app-server")


def test_summary_and_messages_are_captured_in_their_camel_case_wire_form():
    prepared = prepare_session("codex", _snapshot())
    assert type(prepared.summary) is FrozenDict
    assert prepared.summary["nativeSessionId"] == " abc/123 " and prepared.summary["gitRepo"] is None
    assert type(prepared.normalized_messages) is tuple
    assert prepared.normalized_messages[1]["eventIndex"] == 1


def test_the_snapshot_hash_covers_views_revision_completeness_and_chunk_structure():
    prepared = prepare_session("codex", _snapshot(), target_chunk_bytes=2000)
    expected = content_hash(
        {
            "summary": prepared.summary,
            "normalizedMessages": prepared.normalized_messages,
            "revision": "rev-1",
            "complete": True,
            "chunks": [
                {"part": c.part, "contentHash": c.content_hash, "byteLength": c.byte_length, "eventCount": c.event_count}
                for c in prepared.chunks
            ],
        }
    )
    assert prepared.snapshot_hash == expected


def test_the_snapshot_hash_depends_on_chunk_descriptors_not_on_chunk_contents():
    prepared = prepare_session("codex", _snapshot(), target_chunk_bytes=2000)
    descriptors = prepared.descriptors()
    # the structural input alone reproduces it: no event is part of it
    assert snapshot_hash(prepared.summary, prepared.normalized_messages, "rev-1", True, descriptors) == prepared.snapshot_hash
    forged = [dict(d) for d in descriptors]
    forged[0]["byteLength"] += 1
    assert snapshot_hash(prepared.summary, prepared.normalized_messages, "rev-1", True, forged) != prepared.snapshot_hash


@pytest.mark.parametrize(
    "change",
    [
        {"revision": None},
        {"revision": "rev-2"},
        {"complete": False},
        {"summary": SessionSummary(native_session_id="abc/123", title="Other")},
        {"normalized_messages": []},
        {"events": [{"type": "turn", "id": "t0"}]},
    ],
)
def test_any_change_to_the_snapshot_changes_its_hash(change):
    base = prepare_session("codex", _snapshot())
    assert prepare_session("codex", _snapshot(**change)).snapshot_hash != base.snapshot_hash


def test_the_source_spelling_and_driver_do_not_change_the_snapshot_hash():
    a = prepare_session("codex", _snapshot(), driver="codex-app-server")
    b = prepare_session(" CODEX ", _snapshot(), driver=None)
    assert a.snapshot_hash == b.snapshot_hash and a.key == b.key


def test_a_wire_dict_snapshot_prepares_exactly_like_the_model():
    model = _snapshot()
    assert prepare_session("codex", model.to_wire()).snapshot_hash == prepare_session("codex", model).snapshot_hash


def test_changing_the_snapshot_after_preparing_changes_nothing_prepared():
    snapshot = _snapshot()
    prepared = prepare_session("codex", snapshot)
    text = _record_text(prepared)
    snapshot.events[0]["text"] = "changed"
    snapshot.summary.raw["id"] = "changed"
    snapshot.normalized_messages[0].text = "changed"
    assert _record_text(prepared) == text
    assert prepared.chunks[0].events[0]["text"] == "x" * 300


def test_the_prepared_record_is_one_camel_case_json_line():
    prepared = prepare_session("codex", _snapshot(), target_chunk_bytes=2000, driver="codex-app-server")
    text = _record_text(prepared)
    assert text.endswith("\n") and text.count("\n") == 1
    record = json.loads(text)
    assert record["record"] == "prepared"
    assert list(record) == [
        "record", "key", "sourceId", "nativeSessionId", "driver", "summary",
        "normalizedMessages", "revision", "complete", "snapshotHash", "chunks",
    ]  # fmt: skip
    assert list(record["chunks"][0]) == ["part", "contentHash", "byteLength", "eventCount", "events"]
    assert record == json.loads(json.dumps(prepared.to_record()))


def test_a_prepared_record_reads_back_with_the_same_hashes_and_text():
    prepared = prepare_session("codex", _snapshot(), target_chunk_bytes=2000, driver="acp")
    text = _record_text(prepared)
    again = PreparedSession.from_record(json.loads(text))
    assert again.snapshot_hash == prepared.snapshot_hash
    assert again.descriptors() == prepared.descriptors()
    assert again == prepared
    assert _record_text(again) == text


def test_a_realistic_codex_session_round_trips_through_its_record():
    snapshot = SessionGenerator(7).session(7, 300_000)
    prepared = prepare_session("codex", snapshot, target_chunk_bytes=64 * 1024)
    assert len(prepared.chunks) > 3
    for chunk in prepared.chunks:
        assert chunk.byte_length == len(json.dumps(list(chunk.events), separators=(",", ":"), ensure_ascii=False).encode())
    again = PreparedSession.from_record(json.loads(_record_text(prepared)))
    assert again.snapshot_hash == prepared.snapshot_hash


def test_writing_a_record_never_yields_a_piece_larger_than_a_chunk_or_the_head():
    prepared = prepare_session("codex", _snapshot(), target_chunk_bytes=1500)
    pieces = list(prepared.iter_json_pieces())
    head = pieces[0]
    assert max(len(p) for p in pieces[1:]) <= max(c.byte_length for c in prepared.chunks)
    assert '"events"' not in head


def test_an_empty_snapshot_prepares_part_zero_with_no_events():
    prepared = prepare_session("codex", _snapshot(events=[]))
    assert [c.descriptor() for c in prepared.chunks] == [
        {"part": 0, "contentHash": content_hash([]), "byteLength": 2, "eventCount": 0}
    ]
    assert json.loads(_record_text(prepared))["chunks"][0]["events"] == []


def _tampered(mutate) -> dict:
    record = json.loads(_record_text(prepare_session("codex", _snapshot(), target_chunk_bytes=2000)))
    mutate(record)
    return record


@pytest.mark.parametrize(
    "mutate,code",
    [
        (lambda r: r["chunks"][0]["events"][0].update(text="forged"), "hash-mismatch"),
        (lambda r: r["chunks"][0].update(byteLength=r["chunks"][0]["byteLength"] + 1), "hash-mismatch"),
        (lambda r: r["chunks"][1].update(eventCount=99), "hash-mismatch"),
        (lambda r: r.update(snapshotHash="sha256:" + "0" * 64), "hash-mismatch"),
        (lambda r: r.update(revision="other"), "hash-mismatch"),
        (lambda r: r["normalizedMessages"][0].update(text="forged"), "hash-mismatch"),
        (lambda r: r.update(key="codex/other"), "invalid-prepared-record"),
        (lambda r: r["chunks"][1].update(part=5), "invalid-prepared-record"),
        (lambda r: r.update(chunks=[]), "invalid-prepared-record"),
        (lambda r: r.update(complete="yes"), "invalid-prepared-record"),
        (lambda r: r.update(record="snapshot"), "invalid-prepared-record"),
        (lambda r: r["normalizedMessages"][0].update(role="robot"), "invalid-prepared-record"),
    ],
)
def test_a_record_whose_content_does_not_match_its_hashes_is_refused(mutate, code):
    with pytest.raises(PrepareError) as info:
        PreparedSession.from_record(_tampered(mutate))
    assert info.value.code == code


def test_chunking_in_prepare_matches_chunking_the_events_alone():
    snapshot = _snapshot()
    prepared = prepare_session("codex", snapshot, target_chunk_bytes=1500)
    assert [c.descriptor() for c in chunk_events(snapshot.events, 1500)] == prepared.descriptors()


def test_many_messages_and_non_ascii_identities_write_a_record_that_reads_back():
    messages = [
        NormalizedMessage(id=f"m{i}", role="assistant", kind="agentMessage", text=f"ü {i}", event_index=0)
        for i in range(1300)
    ]
    prepared = prepare_session("Cödex", _snapshot(normalized_messages=messages, summary=SessionSummary(native_session_id="sé")))
    text = _record_text(prepared)
    record = json.loads(text)
    assert record == json.loads(json.dumps(prepared.to_record()))
    assert len(record["normalizedMessages"]) == 1300 and record["sourceId"] == "cödex"
    assert PreparedSession.from_record(record).snapshot_hash == prepared.snapshot_hash


def test_consuming_preparation_empties_the_models_events_and_prepares_the_same_session():
    snapshot = _snapshot()
    expected = prepare_session("codex", _snapshot(), target_chunk_bytes=2000)
    events = snapshot.events
    prepared = prepare_session("codex", snapshot, target_chunk_bytes=2000, consume=True)
    assert prepared == expected and _record_text(prepared) == _record_text(expected)
    assert events == [] and snapshot.events is events


def test_consuming_a_wire_snapshot_empties_its_own_events_list_not_a_copy():
    wire = SessionGenerator(11).session(11, 60_000)
    expected = prepare_session("codex", wire)
    events = wire["events"]
    held = list(events)  # the events themselves stay alive here, only the list is emptied
    prepared = prepare_session("codex", wire, consume=True)
    assert prepared == expected and events == [] and wire["events"] is events
    assert sum(c.event_count for c in prepared.chunks) == len(held)


def test_a_consumed_event_is_released_before_preparation_ends(monkeypatch):
    import gc
    import weakref

    from lib import chunking

    class Event(dict):  # a dict subclass can be weakly referenced; it takes the captured path
        pass

    refs = []

    def events():
        for i in range(3):
            event = Event(type="turn", id=f"t{i}", text="x" * 100)
            refs.append(weakref.ref(event))
            yield event

    snapshot = _snapshot(events=[])
    snapshot.events = list(events())
    alive_while_preparing = []
    real = chunking._measure

    def measure(event, index):
        gc.collect()
        alive_while_preparing.append(sum(ref() is not None for ref in refs))
        return real(event, index)

    monkeypatch.setattr(chunking, "_measure", measure)
    prepare_session("codex", snapshot, consume=True)
    # when event i is measured, the events before it are gone already
    assert alive_while_preparing == [3, 2, 1]


def test_a_large_session_is_noted_for_memory_release_and_released_once(monkeypatch):
    import sys

    from lib import memory_release, prepare

    memory_release.release_after_large_session()  # whatever came before
    assert memory_release.release_after_large_session() is False
    prepare_session("codex", _snapshot())
    assert memory_release.release_after_large_session() is False  # small: nothing to hand back
    monkeypatch.setattr(prepare, "CACHE_RESET_BYTES", 1000)
    prepare_session("codex", _snapshot())
    released = memory_release.release_after_large_session()
    assert released is sys.platform.startswith("linux")  # glibc's malloc_trim
    assert memory_release.release_after_large_session() is False

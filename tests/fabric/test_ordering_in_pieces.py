"""Session 30 (issue 14 goal 4): the ordering's text is written in pieces
(ordering_text.text_pieces) and the SQLite store keeps it compressed as they come
(stored_values.encode_pieces, Store.stored_form_of_pieces): the index commit never holds
the text whole, and what is stored reads back as the same text."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.fabric import ordering_text, stored_values, values
from lib.fabric.ordering import OrderingState, read_ordering
from lib.fabric.stored_values import decode, encode, encode_pieces
from tests.fabric.target_helpers import descriptor, make_env, publish, snapshot

OWNER = "did:key:z6MkOwner"
SPACE = "did:key:z6MkSpace"


def _state(count: int) -> OrderingState:
    sessions = {f"codex/{n:05d}": n + 1 for n in range(count)}
    sessions.update({'codex/a"quoted': 7, "codex/é中": 8, "codex/\\": 9})  # escaped and wider characters
    return OrderingState(sessions, {"codex": 3}, {"codex": 3})


def test_the_pieces_joined_are_the_text_values_dumps_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ordering_text, "PIECE_BYTES", 64)
    state = _state(500)
    pieces = list(ordering_text.text_pieces(state, OWNER))
    assert len(pieces) > 100 and all(len(piece) >= 64 for piece in pieces[:-1])
    assert b"".join(pieces).decode("utf-8") == values.dumps(state.to_value(OWNER)) == state.text(OWNER)


def test_a_text_compressed_piece_by_piece_reads_back_as_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ordering_text, "PIECE_BYTES", 256)
    state = _state(3000)
    text = state.text(OWNER)
    made = encode_pieces(ordering_text.text_pieces(state, OWNER), SPACE)
    assert made is not None
    stored, length = made
    assert type(stored) is bytes and length == len(text.encode("utf-8"))
    assert decode(stored, SPACE) == text == decode(encode(text, SPACE), SPACE)


def test_a_text_encode_would_keep_or_rewrite_is_left_to_encode() -> None:
    link = values.dumps(values.Link("of:fid1:" + "A" * 43, SPACE))
    long = b'{"a":"' + b"x" * 4000 + b'"}'
    assert encode_pieces([b'{"a":1}'], SPACE) is None  # short: kept as its text
    for at in range(1, len(link)):  # a link into the space, whole or across two pieces
        joined = long[:-2] + b'","l":' + link.encode() + b"}"
        split = joined.index(link.encode()) + at
        assert encode_pieces([joined[:split], joined[split:]], SPACE) is None
    assert encode_pieces([long[:100], b"\x01", long[100:]], SPACE) is None  # the marker
    assert encode_pieces([long[:2000], long[2000:]], SPACE) is not None


def test_the_commit_keeps_the_ordering_without_making_its_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot(f"s{n:03d}", messages=1) for n in range(40)])

    def made(self: OrderingState, owner_did: str) -> str:
        raise AssertionError("the ordering's text was made whole")

    monkeypatch.setattr(OrderingState, "text", made)
    monkeypatch.setattr(stored_values, "COMPRESS_AT", 16)  # 40 sessions' text compressed too
    publish(target, descriptor(), [snapshot("s000", messages=2)], listed=[f"s{n:03d}" for n in range(40)])
    stored = target.store.read(target.space, target.cells.ordering).value
    assert len(stored["sessions"]) == 40 and stored["sessions"]["codex/s000"] > stored["sessions"]["codex/s001"]


def test_a_stored_text_inflated_in_pieces_is_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compressed text comes back a part at a time, its short links (cut or not by a
    piece's end) written long: joined, what `decode` gives."""
    monkeypatch.setattr(stored_values, "INFLATE_BYTES", 64)
    link = values.dumps(values.Link("of:fid1:" + "A" * 43, SPACE))
    text = "[" + ",".join([link, '"x"', link] * 300) + "]"
    stored = encode(text, SPACE)
    assert type(stored) is bytes and "\x01" in stored_values.isal_zlib.decompress(stored).decode()
    pieces = list(stored_values.decode_pieces(stored, SPACE))
    assert len(pieces) > 3 and "".join(pieces) == decode(stored, SPACE) == text
    assert list(stored_values.decode_pieces("plain", SPACE)) == ["plain"]


def test_the_ordering_is_read_a_piece_at_a_time_and_is_the_state_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = make_env(tmp_path).target()
    names = [f"s{n:03d}" for n in range(60)]
    publish(target, descriptor(), [snapshot(name, messages=1) for name in names])
    monkeypatch.setattr(stored_values, "INFLATE_BYTES", 32)  # entries cut by every piece's end
    read = target.store.read_text(target.space, target.cells.ordering)
    assert read is not None
    pieces = list(read[1])
    assert len(pieces) > 5
    whole = values.dumps(target.store.read(target.space, target.cells.ordering).value)
    assert "".join(pieces) == whole

    def whole_text(*args: object) -> None:
        raise AssertionError("the ordering was decoded whole")

    monkeypatch.setattr(OrderingState, "from_text", whole_text)
    version, state = read_ordering(target.store, target.space, target.cells.ordering, {})
    assert version == read[0] and state.to_value(OWNER) == {**target.store.read(
        target.space, target.cells.ordering).value, "ownerDid": OWNER}
    assert sorted(state.sessions) == [f"codex/{name}" for name in names]


def test_an_ordering_of_another_shape_is_decoded_whole(tmp_path: Path) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("a")])
    value = dict(target.store.read(target.space, target.cells.ordering).value)
    other = {"note": "another writer's field order", **value}  # not the shape text_of writes
    with target.store.transaction(target.space, target.writer) as tx:
        tx.write(target.cells.ordering, other)
        tx.commit()
    version, state = read_ordering(target.store, target.space, target.cells.ordering, {})
    assert version > 0 and dict(state.sessions.items()) == value["sessions"]

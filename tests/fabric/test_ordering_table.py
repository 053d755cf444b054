"""The ordering's sessions held as one table (ordering_table.py) and its cell's text written
from it and read into it (ordering_text.py), issue 14 goal 4: the very text and state the
dict-based ordering wrote and read, no object a session."""

from __future__ import annotations

import gc
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from lib.fabric import values
from lib.fabric.index_store import read_prior
from lib.fabric.ordering import ORDERING_SCHEMA, OrderingState
from lib.fabric.ordering_table import SessionKeys, SessionSequences
from lib.fabric.ordering_text import read_entries
from lib.fabric.prior_table import PriorRows
from tests.fabric.target_helpers import descriptor, make_env, publish, snapshot

OWNER = "did:key:z6MkOwner"
keys = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["codex/a", "codex/b", "/quoted", 'a"b', "a\\b", "\n", "é", "中", "\U0001F600", "\ud800", ""]
)
sequences = st.integers(min_value=1, max_value=2**63 - 1) | st.integers(min_value=1, max_value=2000)
contents = st.dictionaries(keys, sequences, max_size=40)
sources = st.dictionaries(st.sampled_from(["codex", "claude", "/x"]), st.integers(min_value=1, max_value=99))


def _dict_text(sessions: dict[str, int], complete: dict[str, int], rows: dict[str, int]) -> str:
    """What the dict-based ordering wrote: its value, each object in key order, by values.dumps."""
    return values.dumps({
        "schema": ORDERING_SCHEMA, "ownerDid": OWNER,
        "sessions": {k: sessions[k] for k in sorted(sessions)},
        "completeSources": {k: complete[k] for k in sorted(complete)},
        "sourceRows": {k: rows[k] for k in sorted(rows)},
    })


def _buffers(names: list[str]) -> tuple:
    """Keys laid out as a prior table's (PriorRows.key_buffers)."""
    table = SessionKeys()
    for name in dict.fromkeys(names):
        table.append(name)
    return table.text, table.ends, table.hashes, table.slots


@settings(max_examples=300, deadline=None)
@given(contents, sources, sources)
@example({"codex/b": 3, "codex/a": 3}, {"codex": 3}, {"codex": 3})
@example({"/quoted": 1, "a": 2}, {}, {})  # an object with a key starting with "/" is escaped whole
@example({"\ud800": 1}, {}, {})  # a lone surrogate: the whole text is json.dumps's
@example({"a": 2**53 + 1}, {}, {})  # a sequence beyond 2**53 is tagged
def test_the_text_written_from_the_table_is_what_values_dumps_writes(sessions, complete, rows) -> None:
    state = OrderingState(dict(sessions), dict(complete), dict(rows))
    expected = _dict_text(sessions, complete, rows)
    assert values.dumps(state.to_value(OWNER)) == expected
    assert state.text(OWNER) == expected


@settings(max_examples=200, deadline=None)
@given(contents, st.lists(keys, max_size=20), st.data())
@example({"codex/a": 5, "codex/c": 2}, ["codex/b", "codex/a"], None)
def test_a_text_read_back_is_the_state_written_its_known_keys_the_prior_tables(sessions, row_keys, data) -> None:
    text = OrderingState(dict(sessions)).text(OWNER)
    shared = _buffers(row_keys + [k for k in sessions if data is None or data.draw(st.booleans())])
    read = OrderingState.from_text(text, shared)
    assert dict(read.sessions.items()) == sessions
    assert read.text(OWNER) == text
    own = read.sessions.keys_table  # a key the prior table holds is its, not the table's own
    assert len(own.ends) == len(set(sessions) - set(_keys_of(shared)))
    if all(k[:1] != "/" and "\ud800" not in k and v <= 2**53 for k, v in sessions.items()):
        assert read_entries(text, ORDERING_SCHEMA, shared) is not None  # read entry by entry


def _keys_of(buffers: tuple) -> list[str]:
    text, ends = buffers[0], buffers[1]
    return [text[(ends[at - 1] if at else 0) : ends[at]].decode("utf-8", "surrogatepass") for at in range(len(ends))]


@settings(max_examples=200, deadline=None)
@given(contents, st.lists(st.tuples(keys, sequences), max_size=40), st.lists(keys, max_size=10))
def test_records_keep_the_newest_and_merging_changes_neither_state(sessions, records, row_keys) -> None:
    prior = OrderingState.from_text(OrderingState(dict(sessions)).text(OWNER), _buffers(row_keys + list(sessions)))
    recorded = prior.recording()
    expected = dict(sessions)
    for key, seq in records:
        recorded.record_session(key, seq)
        expected[key] = max(seq, expected.get(key, 0))
    merged = prior.merged(recorded)
    assert dict(merged.sessions.items()) == expected
    assert dict(prior.sessions.items()) == sessions  # a cached prior's state stays as it was
    assert merged.text(OWNER) == _dict_text(expected, {}, {})
    for key, seq in records:  # the rules read the merged state as they read the dict
        assert merged.keeps_newer(key, seq - 1) and not merged.keeps_newer(key, expected[key])
    # another publication of the same prior, after the first added keys: its own
    again = prior.recording()
    again.record_session("codex/new", 7)
    assert dict(prior.merged(again).sessions.items()) == {**sessions, "codex/new": max(7, sessions.get("codex/new", 0))}
    assert dict(merged.sessions.items()) == expected


def test_the_table_holds_no_object_a_session() -> None:
    def table(count: int) -> SessionSequences:
        names = [f"codex/{n:06d}" for n in range(count)]
        out = SessionSequences(shared=_buffers(names[: count // 2]))
        out.load((name, 1000 + n) for n, name in enumerate(names))
        return out

    def held(sessions: SessionSequences) -> int:  # the objects its parts refer to
        keys = sessions.keys_table
        parts = [sessions.__getattribute__(name) for name in SessionSequences.__slots__]
        return len(gc.get_referents(*parts, *(getattr(keys, name) for name in SessionKeys.__slots__)))

    small, large = table(10), table(4000)
    assert large["codex/003999"] == 4999 and large["codex/000001"] == 1001 and "codex/x" not in large
    assert held(large) == held(small)


def test_a_prior_read_from_the_store_shares_its_rows_keys_and_a_commit_writes_the_same_text(
    tmp_path: Path,
) -> None:
    target = make_env(tmp_path).target()
    publish(target, descriptor(), [snapshot("b"), snapshot("a"), snapshot("c")])
    target.graphs.committed.clear()  # read from the store, not from this process's memory
    prior = read_prior(target.graphs, target.cells)
    assert type(prior.rows) is PriorRows
    keys = prior.ordering.sessions.keys_table
    assert keys.shared == 3 and len(keys.ends) == 0  # no key of its own: the rows'
    stored = target.store.read(target.space, target.cells.ordering).value
    assert dict(prior.ordering.sessions.items()) == stored["sessions"]
    assert prior.ordering.text(OWNER) == values.dumps({**stored, "ownerDid": OWNER})

    publish(target, descriptor(), [snapshot("a"), snapshot("d")])  # d new, b and c deleted
    after = target.store.read(target.space, target.cells.ordering).value
    assert list(after["sessions"]) == ["codex/a", "codex/b", "codex/c", "codex/d"]
    assert after["sessions"]["codex/d"] > stored["sessions"]["codex/a"]

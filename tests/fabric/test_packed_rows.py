"""Index rows held packed (lib/fabric/packed_rows.py): the exact fields back, in order."""

from __future__ import annotations

import sys

from lib.fabric.packed_previews import PackedPreviews, StoredPreviews, unpacked_row
from lib.fabric.packed_rows import PackedRow, packed, plain_row
from lib.fabric.values import Link
from lib.hashing import value_hash

SPACE = "did:key:z6MkTestSpace"


def _row(**changes):
    row = {
        "key": "codex:abc",
        "sourceId": "codex",
        "nativeSessionId": "abc",
        "driver": "codex-app-server",
        "title": "a title with ünïcode",
        "cwd": "/work/x",
        "createdAt": "2026-01-05T09:00:00Z",
        "updatedAt": "2026-01-05T10:00:00Z",
        "archived": False,
        "active": None,
        "capabilities": {"read": True, "modes": ["a", "b"], "limits": {"n": 3}},
        "recentMessages": [{"role": "user", "text": "hi"}, {"role": "agent", "text": "hello"}],
        "manifest": Link("of:" + "a" * 43, SPACE),
        "snapshotHash": "h1",
        "manifestHash": "h2",
        "status": "complete",
        "observedAt": "2026-01-05T10:00:01Z",
    }
    row.update(changes)
    return row


def test_packed_row_gives_back_the_exact_fields_in_order():
    row = _row()
    held = PackedRow(row)
    plain = unpacked_row(held)
    assert type(plain) is dict
    assert list(plain) == list(row)
    assert plain == row
    assert type(plain["manifest"]) is Link and plain["manifest"] == row["manifest"]
    assert held["key"] == "codex:abc" and held["status"] == "complete" and held["sourceId"] == "codex"
    assert held.get("deletedAt") is None and "deletedAt" not in held and "title" in held
    assert len(held) == len(row)


def test_previews_stay_a_stand_in_and_hash_as_the_plain_row():
    row = _row()
    held = PackedRow(row)
    assert isinstance(held["recentMessages"], PackedPreviews)
    assert held["recentMessages"].unpack() == row["recentMessages"]
    assert value_hash(held) == value_hash(row)
    assert value_hash(plain_row(held)) == value_hash(row)


def test_a_row_without_previews_has_none():
    row = _row()
    del row["recentMessages"]
    held = PackedRow(row)
    assert "recentMessages" not in held and held.plain() == row


def test_values_json_cannot_hold_exactly_are_kept_exactly():
    row = _row(score=1.5, big=2**70, nested={"link": Link("of:" + "b" * 43, SPACE)}, pair=("a", 1))
    held = PackedRow(row)
    plain = held.plain()
    assert plain["score"] == 1.5 and type(plain["score"]) is float
    assert plain["big"] == 2**70 and plain["pair"] == ("a", 1)
    assert plain["nested"]["link"] == row["nested"]["link"]
    assert plain["title"] == row["title"]


def test_a_link_with_a_path_survives():
    link = Link("of:" + "c" * 43, SPACE, ("sessions", 2))
    assert PackedRow(_row(manifest=link))["manifest"] == link


def test_equal_rows_are_known_equal_without_unpacking_and_changes_are_seen():
    previews = StoredPreviews(None, SPACE, "of:" + "d" * 43)  # type: ignore[arg-type]
    a = PackedRow(_row(recentMessages=previews))
    b = PackedRow({**a, "status": "complete"})
    assert a.same_as(b) is True and a == b
    c = PackedRow({**a, "title": "another"})
    assert a.same_as(c) is None and a != c
    d = PackedRow(_row(recentMessages=previews, score=1.0))  # pickled: only values can tell
    assert d.same_as(PackedRow(dict(d))) is None and d == PackedRow(dict(d))


def test_with_previews_shares_the_fields():
    held = PackedRow(_row())
    other = StoredPreviews(None, SPACE, "of:" + "e" * 43)  # type: ignore[arg-type]
    moved = held.with_previews(other)
    assert moved["recentMessages"] is other and moved["title"] == held["title"]
    assert held["recentMessages"] is not other


def test_many_rows_read_alternately_stay_right():
    rows = [PackedRow(_row(key=f"codex:{n}", nativeSessionId=str(n), title=f"t{n}")) for n in range(5)]
    for _ in range(3):
        for n, row in enumerate(rows):
            assert row["title"] == f"t{n}" and row["nativeSessionId"] == str(n)


def test_packed_is_idempotent():
    held = PackedRow(_row())
    assert packed(held) is held


def test_blocks_are_kept_in_a_private_unlinked_file():
    import os
    import stat

    held = PackedRow(_row())
    info = os.fstat(held._file._file.fileno())  # the row's block file
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_nlink == 0


def test_a_row_and_the_commit_rules_agree_on_a_packed_row():
    from lib.fabric import session_index as idx

    held = PackedRow(_row(status="stale"))
    fresh = idx.with_status(held, "complete")
    assert type(fresh) is dict and fresh["status"] == "complete" and list(fresh) == list(_row())
    gone = idx.deleted(held, "2026-02-01T00:00:00Z")
    assert gone["status"] == "deleted" and gone["deletedAt"] == "2026-02-01T00:00:00Z"
    assert idx.is_live(held) and idx.row_order(held) == idx.row_order(_row())


def test_a_packed_row_keeps_only_its_key_status_source_and_worktree_in_memory():
    # fresh string objects (not interned constants): a held reference would raise their count
    updated, created, title = ("2026-01-05T10:00:00." + "0" * 3 + "Z")[:], "".join(["2026-01-05T", "09:00:00Z"]), \
        "".join(["a ", "title"])
    counts = [sys.getrefcount(s) for s in (updated, created, title)]
    row = PackedRow(_row(updatedAt=updated, createdAt=created, title=title))
    assert [sys.getrefcount(s) for s in (updated, created, title)] == counts
    assert (row["updatedAt"], row["createdAt"], row["title"]) == (updated, created, title)  # from the block
    assert set(PackedRow.__slots__) == {"key", "status", "source_id", "worktree", "_file", "_at", "_previews"}

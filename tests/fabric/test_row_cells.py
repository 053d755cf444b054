"""Index rows' cells assembled directly (row_cells.py) are the very cells the general
planner makes of them, IDs and texts, and the index roots' text assembled from their
row links is `values.dumps` of the root; rows of another shape go to the planner."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import lib.fabric.index_rows as index_rows
import lib.fabric.index_store as index_store
import lib.fabric.row_cells as row_cells
from lib.fabric import values
from lib.fabric.cell_id import all_session_index_cause
from lib.fabric.graph_plan import plan_graph
from lib.fabric.packed_previews import (
    PreviewCells,
    PreviewSpill,
    SpilledPreviews,
    packed_row,
    unpacked_row,
)
from lib.fabric.packed_rows import PackedRow
from lib.fabric.schemas import SESSION_INDEX_ARRAY_SCOPE, scope
from lib.fabric.values import Link
from lib.hashing import UNDEFINED, value_hash
from tests.fabric.target_helpers import descriptor, make_env, publish, snapshot

SPACE = "did:key:z6MkRowCellsSpace"
OWNER = "did:key:z6MkRowCellsOwner"
ARRAY_SCOPE = scope(SPACE, OWNER, SESSION_INDEX_ARRAY_SCOPE)
MANIFEST = Link.trusted("of:fid1:" + "M" * 43, SPACE)


def message(i: int, **fields: Any) -> dict[str, Any]:
    out = {"id": f"item-{i}", "parentId": None, "role": "user" if i % 2 else "assistant", "kind": "agentMessage",
           "timestamp": "2026-01-07T10:59:00.000Z", "text": f"text {i} " * (i * 20), "eventIndex": i}
    out.update(fields)
    return out


def row(key: str, messages: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "key": key, "sourceId": "codex", "nativeSessionId": key.split("/")[-1], "driver": "codex-app-server",
        "title": f"title of {key}", "cwd": "/home/p", "createdAt": "2026-01-07T10:59:00.000Z",
        "updatedAt": "2026-01-07T10:59:30.000Z", "archived": False, "active": None, "gitRepo": None,
        "gitBranch": None, "gitWorktreeRoot": None, "startedAs": None,
        "capabilities": {"listSessions": True, "modes": [], "configOptions": {}},
        "recentMessages": messages, "manifest": MANIFEST, "snapshotHash": "sha256:" + "a" * 64,
        "manifestHash": "sha256:" + "b" * 64, "status": "complete", "observedAt": "2026-12-01T12:00:00.000Z",
    }
    out.update(fields)
    return out


SHAPES: dict[str, tuple[dict[str, Any], bool]] = {  # name: (row, assembled directly)
    "usual": (row("codex/usual", [message(i) for i in range(12)]), True),
    "no previews": (row("codex/none", []), True),
    "unicode, floats, big ints, escapes": (row("codex/odd", [
        message(0, text="héllo \u2028 \ud800 lone", score=1.5, big=2**60, neg=-0.0),
        message(1, **{"/slash": "escaped key", "nan": float("nan")}),
    ], title="t\u00e9st \ud83d\ude00", weight=2.25), True),
    "a deleted row": (row("codex/gone", [message(1)], status="deleted", deletedAt="2026-12-01T00:00:00.000Z"), True),
    "capabilities with modes": (row("codex/modes", [message(1)], capabilities={"modes": ["a", "b"]}), False),
    "a preview with an array": (row("codex/nested", [message(1, parts=["x"])]), False),
    "previews sharing an id": (row("codex/twice", [message(1), message(1, text="other")]), False),
    "a preview without an id": (row("codex/noid", [message(1, id="")]), False),
    "an undefined field": (row("codex/undef", [message(1)], extra=UNDEFINED), False),
}


def planned_cells(rows: list[dict[str, Any]]) -> tuple[dict[str, str], list[Link]]:
    """What the general planner makes of `rows`: {cell ID: fvj1 text}, and the row links."""
    graph = plan_graph(all_session_index_cause(SPACE, OWNER), {"sessions": rows}, ARRAY_SCOPE)
    return {cell.id: values.dumps(cell.value) for cell in graph.children}, graph.root.value["sessions"]


@pytest.mark.parametrize("cells_in_c", [True, False], ids=["lib._cells", "pure Python"])
def test_rows_assembled_directly_are_the_cells_the_planner_makes(cells_in_c: bool, monkeypatch: pytest.MonkeyPatch):
    if not cells_in_c:
        monkeypatch.setattr(row_cells, "CELLS", None)
    spill = PreviewSpill()
    try:
        plain = [dict(r) for r, _ in SHAPES.values()]
        held = [PackedRow(packed_row(dict(r), spill)) for r in plain]
        direct, rest = row_cells.direct_rows(held, ARRAY_SCOPE, linked=set())
        expected = {name for name, (_, fits) in SHAPES.items() if fits}
        assert [d.key for d in direct] == [r["key"] for (r, fits) in SHAPES.values() if fits], expected
        assert [r["key"] for r in rest] == [r["key"] for (r, fits) in SHAPES.values() if not fits]
        cells, links = planned_cells([unpacked_row(r) for r in held])
        by_key = dict(zip([r["key"] for r in plain], links, strict=True))
        for assembled in direct:
            assert assembled.link == by_key[assembled.key]
            assert assembled.cells[-1][0] == assembled.link.id  # the row cell last
            for cell, text in assembled.cells:
                assert cells[cell] == text
        assert sum(len(d.cells) for d in direct) == sum(
            len(r["recentMessages"]) + 1 for r, fits in SHAPES.values() if fits)
    finally:
        spill.close()


def test_a_row_whose_cell_the_index_links_is_left_to_the_planner():
    spill = PreviewSpill()
    try:
        rows = [PackedRow(packed_row(row(f"codex/s{i}", [message(1)]), spill)) for i in range(3)]
        _, links = planned_cells([unpacked_row(r) for r in rows])
        direct, rest = row_cells.direct_rows(rows, ARRAY_SCOPE, linked={links[1].id})
        assert [d.key for d in direct] == ["codex/s0", "codex/s2"]
        assert [r["key"] for r in rest] == ["codex/s1"]
    finally:
        spill.close()


def test_preview_cells_give_back_the_same_messages_and_row_hash():
    spill = PreviewSpill()
    try:
        plain = SHAPES["unicode, floats, big ints, escapes"][0]
        held = packed_row(dict(plain), spill)
        assert type(held["recentMessages"]) is PreviewCells
        assert value_hash(unpacked_row(held)) == value_hash(plain)
        assert value_hash(held) == value_hash(plain)
        nested = packed_row(dict(SHAPES["a preview with an array"][0]), spill)
        assert type(nested["recentMessages"]) is SpilledPreviews
        assert unpacked_row(nested) == SHAPES["a preview with an array"][0]
    finally:
        spill.close()


ROOT = {"schema": "agentctl.session-index", "ownerDid": OWNER, "bucket": "all", "generatedAt": "2026-12-01",
        "generation": 3, "sessionCount": 2, "olderSessionCount": 0, "sources": [{"id": "codex", "n": 1.5}],
        "sessions": [], "checkouts": [{"root": "/p \u2028"}]}


@pytest.mark.parametrize("links", [
    [],
    [Link.trusted("of:fid1:" + c * 43, SPACE) for c in "abc"],
    [Link.trusted("of:fid1:" + "a" * 43, SPACE), Link("of:fid1:" + "b" * 43, SPACE, ("x", 0)),
     Link.trusted("of:fid1:" + "c" * 43, "did:key:other"), Link.trusted('of:odd"\\\u00e9', SPACE)],
], ids=["no rows", "rows", "links of other shapes"])
def test_root_text_is_the_roots_fvj1_text(links: list[Link]):
    root = {**ROOT, "sessions": links}
    assert row_cells.root_text(root, SPACE) == values.dumps(root)
    last = {k: v for k, v in root.items() if k != "checkouts"}
    assert row_cells.root_text(last, SPACE) == values.dumps(last)
    surrogate = {**root, "sources": [{"id": "\ud800"}]}  # orjson refuses it: json.dumps writes the whole
    assert row_cells.root_text(surrogate, SPACE) == values.dumps(surrogate)


def test_a_packed_row_tells_an_absent_held_field_from_a_null_one():
    with_null = PackedRow({"key": "k", "gitWorktreeRoot": None, "status": "complete"})
    without = PackedRow({"key": "k"})
    assert with_null["gitWorktreeRoot"] is None and with_null.get("gitWorktreeRoot", 1) is None
    assert without.get("gitWorktreeRoot", 1) == 1 and without.get("status", 2) == 2
    with pytest.raises(KeyError):
        without["updatedAt"]
    assert "gitWorktreeRoot" not in without and "gitWorktreeRoot" in with_null
    assert PackedRow({"key": "k", "gitWorktreeRoot": "/w"})["gitWorktreeRoot"] == "/w"


def _documents(path: Path) -> dict[bytes, tuple[Any, Any]]:
    with sqlite3.connect(path) as db:
        return {cell: (labels, value) for cell, labels, value in db.execute(
            "select d.cell_id, l.json, d.value from documents d join labels l on l.id = d.labels_id")}


def planned_and_direct(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, publications: Any
) -> tuple[dict[bytes, tuple[Any, Any]], dict[bytes, tuple[Any, Any]]]:
    """The stored documents after `publications(target)` into two stores of one identity:
    every row through the general planner (as before row_cells.py), then as it is."""
    for side in ("planned", "direct"):
        (tmp_path / side).mkdir()
        if side == "direct":
            shutil.copy(tmp_path / "planned" / "identity", tmp_path / side / "identity")
        with monkeypatch.context() as patch:
            if side == "planned":
                patch.setattr(index_rows, "direct_rows", lambda rows, *_: ([], list(rows)))
            publications(make_env(tmp_path / side).target())
    planned, direct = (_documents(tmp_path / side / "fabric.db") for side in ("planned", "direct"))
    return planned, direct


def test_publications_store_the_same_cells_with_and_without_rows_assembled_directly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(index_store, "ROW_BATCH", 3)
    names = [f"s{i}" for i in range(8)]
    first = [snapshot(n, messages=i + 1, text="x" * (40 * i)) for i, n in enumerate(names)]
    second = [snapshot(n, messages=3, text="changed") for n in names[:2]] + [snapshot("t0", messages=13)]

    def publications(target: Any) -> None:
        publish(target, descriptor(), first)
        publish(target, descriptor(modes=["plan", "edit"]), [snapshot("m0")], listed=[*names, "m0"])
        publish(target, descriptor(), second, listed=[*names, "t0"], preserve=True)

    planned, direct = planned_and_direct(tmp_path, monkeypatch, publications)
    assert len(planned) > 60
    assert planned == direct

"""A publication's touches held as one table (touch_table.py, session 28): a Mapping of
Touch by key with a dict's order and semantics, each row and its previews given back as
held, no object a session."""

from __future__ import annotations

import gc
import random

from lib.fabric.packed_previews import (
    PreviewCells,
    PreviewSpill,
    SpilledPreviews,
    packed_row,
    unpacked_row,
)
from lib.fabric.packed_rows import PackedRow
from lib.fabric.prior_table import SpilledRow
from lib.fabric.touch_table import Touch, Touches
from lib.fabric.values import Link

SPACE = "did:key:z6MkTouches"


def _message(n: int, text: str) -> dict:
    return {"role": "user" if n % 2 else "assistant", "text": text, "at": f"2026-01-01T00:00:{n:02d}Z"}


def _row(key: str, n: int, messages: int) -> dict:
    return {"key": key, "sourceId": "codex" if n % 3 else "other", "nativeSessionId": key.split("/")[-1],
            "status": "complete" if n % 4 else "partial", "title": f"t{n} ü" if n % 5 == 0 else f"t{n}",
            "gitWorktreeRoot": f"/w/{n % 2}" if n % 3 else None, "count": n, "capabilities": {"read": True},
            "manifest": Link.trusted("of:fid1:" + f"{n:043d}", SPACE),
            "recentMessages": [_message(m, f"m{m} of {n}") for m in range(messages)]}


def test_touches_are_a_dict_of_touches_held_as_one_table() -> None:
    """Random rows and touches of every kind, keys touched again: the touches give what a
    dict of the same touches gives (the last touch of a key; the table's keys in the order
    of their first rows), each row with its fields and previews as they were held."""
    rng = random.Random(28)
    spill = PreviewSpill()
    touches, model, rows_first = Touches(spill), {}, {}
    keys = [f"codex/s{n}" for n in range(60)] + ["codex/é", "codex/日本"]
    for step in range(400):
        key, source, sequence = rng.choice(keys), rng.choice(["codex", "other"]), rng.randint(1, 3)
        kind = rng.choice(["row", "row", "prior", "partial", "keep"])
        if kind == "row":
            plain = _row(key, step, rng.randint(0, 3))
            expected = {**plain, "recentMessages": list(plain["recentMessages"])}
            held = touches.hold(key, source, sequence, packed_row(plain, spill if step % 2 else None))
            assert unpacked_row(held) == expected
            model[key] = (source, sequence, "row", expected, held["recentMessages"])
            rows_first.setdefault(key, None)
        else:
            touches[key] = Touch(source, sequence, kind)
            model[key] = (source, sequence, kind, None, None)
        assert len(touches) == len(model) and key in touches
    assert sorted(touches) == sorted(model) and "codex/none" not in touches
    assert list(touches._table) == list(rows_first)  # a key's entry made by its first row
    for key, touch in touches.items():
        expected = model[key]
        assert touches[key].kind == touch.kind
        assert (touch.source_id, touch.sequence, touch.kind) == expected[:3]
        if touch.kind == "row":
            assert isinstance(touch.row, PackedRow) and touch.row._file is touches.blocks
            # previews spilled: held as their place, the stand-in made when asked
            assert (type(touch.row) is SpilledRow) is isinstance(expected[4], PreviewCells | SpilledPreviews)
            assert unpacked_row(touch.row) == expected[3] and touch.row.key == key
        else:
            assert touch.row is None
    assert touches.retouched


def test_a_held_rows_spilled_previews_are_kept_as_their_place_and_made_when_asked() -> None:
    spill = PreviewSpill()
    touches = Touches(spill)
    for n in range(300):
        touches.hold(f"codex/s{n}", "codex", 1, packed_row(_row(f"codex/s{n}", n, 3), spill))
    table = touches._table
    assert not table._other and not touches.retouched  # no stand-in object held
    row = touches["codex/s299"].row
    assert type(row) is SpilledRow and type(row._previews) is int  # no stand-in object a row
    assert type(row["recentMessages"]) in (PreviewCells, SpilledPreviews)
    assert row.same_as(touches["codex/s299"].row) and row == touches["codex/s299"].row
    assert row["recentMessages"].unpack() == _row("codex/s299", 299, 3)["recentMessages"]

    def held(touches: Touches) -> int:  # the objects the table's parts refer to
        return len(gc.get_referents(*vars(touches._table).values(), *gc.get_referents(touches)))

    small = Touches(spill)
    for n in range(10):
        small.hold(f"codex/s{n}", "codex", 1, packed_row(_row(f"codex/s{n}", n, 3), spill))
    assert held(touches) == held(small)

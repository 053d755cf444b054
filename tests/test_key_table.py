"""Strings held as one table (lib/key_table.py): a set's membership and a list's order,
the strings made back exactly, no object a string."""

from __future__ import annotations

import gc
import random

from lib.key_table import KeyTable


def test_a_key_table_is_a_set_in_insertion_order() -> None:
    rng = random.Random(14)
    words = [f"id-{n}" for n in range(3000)] + ["é", "\ud800", "", "a\x00b", "日本"]
    table, model = KeyTable(), {}
    for _ in range(8000):
        word = rng.choice(words)
        assert table.add_distinct(word) is (word not in model)
        model.setdefault(word, None)
    assert list(table) == list(model) and len(table) == len(model)
    assert all(word in table for word in model) and "id-x" not in table and 7 not in table
    assert [table.position(word) for word in list(model)[:50]] == list(range(50))


def test_appended_strings_are_indexed_when_first_looked_up_and_a_repeat_is_named() -> None:
    table = KeyTable(f"k{n}" for n in range(100))
    assert table.index() is None and table.position("k99") == 99
    table.append("k5")
    assert table.index() == 100 and table.position("k5") == 5
    assert KeyTable(["a", "b"], indexed=True).position("b") == 1


def test_the_table_holds_no_object_a_string() -> None:
    def held(table: KeyTable) -> int:
        return len(gc.get_referents(*vars(table).values()))

    small, large = KeyTable(map(str, range(10))), KeyTable(map(str, range(20000)))
    assert "19999" in large and held(small) == held(large)

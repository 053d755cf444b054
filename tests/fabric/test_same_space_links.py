"""`SameSpaceLinks` (stored_values.py): a kept list of short links read back as the IDs
they hold, kept as the list's stored text, each ID made when asked (session 28: an index
root's 25,000 row links had been a tuple of 25,000 ID strings)."""

from __future__ import annotations

import gc
import hashlib

import pytest

from lib.fabric import stored_values, values
from lib.fabric.stored_values import SameSpaceLinks
from lib.fabric.values import Link

SPACE = "did:key:z6MkSameSpaceLinksTest"


def ids(count: int) -> list[str]:
    """`count` well-formed cell IDs (`of:fid1:` and 43 URL-safe characters)."""
    out = []
    for n in range(count):
        body = hashlib.sha256(str(n).encode()).hexdigest()[:43].replace("a", "_").replace("b", "-")
        out.append("of:fid1:" + body)
    return out


def stored_root(cell_ids: list[str]) -> str | bytes:
    """How the SQLite store keeps a root of these row links (short links, compressed when large)."""
    value = {"schema": "s", "sessions": [Link.trusted(i, SPACE) for i in cell_ids], "generation": 3}
    return stored_values.encode(values.dumps(value), SPACE)


@pytest.mark.parametrize("count", [1, 2, 7, 300])
def test_a_kept_list_of_short_links_reads_back_as_its_ids_in_order(count: int) -> None:
    cell_ids = ids(count)
    value = stored_values.read_keeping(stored_root(cell_ids), SPACE, frozenset({"sessions"}))
    links = value["sessions"]
    assert type(links) is SameSpaceLinks
    assert len(links) == count
    assert list(links) == cell_ids
    assert links == tuple(cell_ids) and links == cell_ids
    assert value["generation"] == 3 and value["schema"] == "s"
    assert links[0] == cell_ids[0] and links[-1] == cell_ids[-1]
    assert links[1:4] == cell_ids[1:4] and links[::-2] == cell_ids[::-2]
    with pytest.raises(IndexError):
        links[count]
    with pytest.raises(IndexError):
        links[-count - 1]


def test_an_empty_list_reads_back_empty() -> None:
    assert stored_values.read_keeping(stored_root([]), SPACE, frozenset({"sessions"}))["sessions"] == []


def test_the_sequence_made_of_ids_equals_the_one_read_and_refuses_what_is_no_short_link() -> None:
    cell_ids = ids(5)
    read = stored_values.read_keeping(stored_root(cell_ids), SPACE, frozenset({"sessions"}))["sessions"]
    assert SameSpaceLinks.of(cell_ids) == read and hash(SameSpaceLinks.of(cell_ids)) == hash(read)
    assert SameSpaceLinks.of(iter(cell_ids)) == read  # an iterator is read once
    assert SameSpaceLinks.of(cell_ids[:4]) != read
    with pytest.raises(ValueError):
        SameSpaceLinks.of(["of:fid1:short"])


def test_the_ids_are_held_as_one_text_not_a_string_each() -> None:
    """The objects the sequence refers to do not grow with its length: no ID string is
    held until one is asked for (a tuple of IDs refers to one string an ID)."""

    def held(count: int) -> int:
        links = stored_values.read_keeping(stored_root(ids(count)), SPACE, frozenset({"sessions"}))["sessions"]
        return len(gc.get_referents(links)) + sum(len(gc.get_referents(part)) for part in gc.get_referents(links))

    assert held(2_000) == held(3)

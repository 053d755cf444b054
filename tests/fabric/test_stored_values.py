"""How the SQLite store keeps fvj1 text: every stored form reads back as the very text
that was written (and so as the same value and value hash)."""

from __future__ import annotations

import json
import zlib

import pytest

from lib.fabric import stored_values, value_decoding, values
from lib.fabric.cell_id import cell_id
from lib.fabric.values import Link

SPACE = "did:key:z6MkStoredValuesSpace"
OTHER = "did:key:z6MkSomeoneElse"
ID = cell_id("stored-values/a")


def _round_trip(text: str, space: str = SPACE) -> str | bytes:
    stored = stored_values.encode(text, space)
    assert stored_values.decode(stored, space) == text
    return stored


def test_a_link_into_the_documents_space_is_stored_short_and_read_back_whole():
    text = values.dumps({"events": [Link(ID, SPACE), Link(ID, SPACE, ("a", 1)), Link(ID, OTHER)]})
    stored = _round_trip(text)
    if isinstance(stored, bytes):  # compressed as well
        stored = zlib.decompress(stored).decode()
    assert stored.count("\x01") == 1  # only the same-space link at no path
    assert stored.count(SPACE) == 1 and OTHER in stored  # the link at a path keeps its form
    assert len(text) - len(stored) > 80


def test_link_shaped_text_inside_strings_and_quoted_objects_reads_back_unchanged():
    long_form = values.dumps(Link(ID, SPACE))
    tricky = {
        "text": long_form,  # a string holding a link's JSON: escaped, never matched
        "/key": {"/quote": json.loads(long_form)},  # an escaped object holding the form
        "plain": {"/": {"link@1": {"id": ID, "path": [], "space": SPACE}}},
    }
    text = values.dumps(tricky)
    _round_trip(text)
    assert value_decoding.loads(stored_values.decode(stored_values.encode(text, SPACE), SPACE)) == value_decoding.loads(text)


def test_a_large_compressible_text_is_stored_compressed_and_a_small_one_is_not():
    small = values.dumps({"t": "word " * 10})
    large = values.dumps({"t": "word " * 1000})
    assert isinstance(_round_trip(small), str)
    stored = _round_trip(large)
    assert isinstance(stored, bytes) and len(stored) < len(large) // 10
    assert zlib.decompress(stored).decode() == large


def test_text_written_by_schema_version_1_reads_back_as_it_is():
    legacy = values.dumps({"a": [Link(ID, SPACE)], "s": "caf\u00e9 \u2028"})
    assert stored_values.decode(legacy, SPACE) == legacy


def test_non_ascii_and_escaped_control_characters_round_trip():
    text = values.dumps({"s": "\u0001 \u00e9 \U0001f600 " * 200, "l": [Link(ID, SPACE)] * 3})
    assert "\x01" not in text  # JSON escapes it
    _round_trip(text)


def test_a_raw_u0001_in_the_text_is_refused():
    with pytest.raises(ValueError):
        stored_values.encode('"\x01"', SPACE)

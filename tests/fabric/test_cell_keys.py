"""Cell IDs as the SQLite store keeps them: content-derived IDs as 32 bytes, others as
text, every one read back as the very ID written."""

from __future__ import annotations

from lib.fabric import cell_keys
from lib.fabric.cell_id import cell_id
from tests.fabric.store_contract import SPACE, put


def test_a_content_derived_id_is_kept_as_its_32_bytes_and_read_back_whole():
    made = cell_id({"any": "cause"})
    stored = cell_keys.key(made)
    assert isinstance(stored, bytes) and len(stored) == 32
    assert cell_keys.cell(stored) == made


def test_other_ids_and_non_canonical_spellings_stay_text():
    canonical = cell_id("x")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    # the same 32 bytes with a nonzero padding bit: a spelling encoding never gives
    odd = canonical[:-1] + alphabet[alphabet.index(canonical[-1]) + 1]
    for other in ("of:x", "of:fid1:short", canonical + "A", "of:fid2:" + canonical[8:], odd):
        assert cell_keys.key(other) == other
        assert cell_keys.cell(other) == other


def test_both_forms_live_side_by_side_in_one_store(tmp_path):
    from lib.fabric.sqlite_store import SQLiteStore

    derived = cell_id("side/by/side")
    with SQLiteStore(tmp_path / "f.db") as store:
        put(store, derived, 1)
        put(store, "of:plain", 2)
        assert store.read(SPACE, derived).value == 1
        assert store.read(SPACE, "of:plain").value == 2
        assert store.changes_since(SPACE, 0) == [(derived, 1), ("of:plain", 2)]
        assert store.existing(SPACE, [derived, "of:plain", "of:none"]) == {derived, "of:plain"}

"""An index root's links held as their cells' IDs (root_links.RootLinks, session 28), and
the root written from them: the SQLite store's stored form made without the root's long
text is the very form it makes from that text, byte for byte."""

from __future__ import annotations

import os
import random
import stat

import pytest

from lib.fabric import root_links, stored_values, values
from lib.fabric.index_roots import root_digest
from lib.fabric.root_links import RootLinks
from lib.fabric.row_cells import root_parts, root_text
from lib.fabric.values import Link

SPACE = "did:key:z6MkRootLinks"
ROOT = {"schema": "agentctl.session-index", "ownerDid": "did:key:z6MkOwner", "bucket": "all",
        "generatedAt": "2026-12-07T05:00:00Z", "generation": 3, "sessionCount": 2, "olderSessionCount": 0,
        "sources": [{"id": "codex", "n": 1.5, "note": "\u00e9\u2028"}], "sessions": [],
        "checkouts": [{"root": "/p", "manifest": Link.trusted("of:fid1:" + "m" * 43, SPACE)}]}


def _ids(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
    return ["of:fid1:" + "".join(rng.choice(alphabet) for _ in range(43)) for _ in range(count)]


def _held(ids: list[str]) -> RootLinks:
    held = RootLinks(SPACE)
    for cell in ids:
        held.add_id(cell)
    return held


@pytest.mark.parametrize("count", [0, 1, 2, 3000])
def test_the_stored_form_made_from_the_ids_is_the_one_made_from_the_long_text(count: int) -> None:
    ids = _ids(count, seed=count)
    links = [Link.trusted(cell, SPACE) for cell in ids]
    held = _held(ids)
    assert held.all_short and len(held) == count and list(held) == links and held == links
    root = {**ROOT, "sessions": held}
    text = values.dumps({**ROOT, "sessions": links})
    assert root_text(root, SPACE) == text
    head, tail = root_parts(root)
    assert stored_values.encode_links(head, held.bodies, tail, SPACE) == stored_values.encode(text, SPACE)
    short = {"sessions": held}  # below COMPRESS_AT when empty: the short text itself
    head, tail = root_parts(short)
    assert stored_values.encode_links(head, held.bodies, tail, SPACE) == stored_values.encode(
        values.dumps({"sessions": links}), SPACE)


def test_links_of_other_forms_are_kept_as_they_are_and_written_from_the_text() -> None:
    ids = _ids(3, seed=1)
    held = _held(ids)
    other = Link("of:fid1:" + "b" * 43, SPACE, ("x", 0))
    held.add(other)
    held.add_id("of:odd")
    held.add(Link.trusted(ids[0], "did:key:other"))
    assert not held.all_short and len(held) == 6
    assert held[3] is other and held[4] == Link.trusted("of:odd", SPACE) and held[-1].space == "did:key:other"
    assert root_text({**ROOT, "sessions": held}, SPACE) == values.dumps({**ROOT, "sessions": list(held)})


def test_a_roots_digest_is_the_same_for_its_links_held_or_listed_and_differs_when_a_link_does() -> None:
    ids = _ids(50, seed=2)
    listed = {**ROOT, "sessions": [Link.trusted(cell, SPACE) for cell in ids]}
    held = {**ROOT, "sessions": _held(ids)}
    assert root_digest(listed, SPACE) == root_digest(held, SPACE)
    assert root_digest({**held, "generation": 9, "generatedAt": "later"}, SPACE) == root_digest(held, SPACE)
    assert root_digest({**ROOT, "sessions": _held(ids[:-1] + ids[:1])}, SPACE) != root_digest(held, SPACE)
    assert root_digest({**held, "sessionCount": 3}, SPACE) != root_digest(held, SPACE)


@pytest.mark.parametrize("at_once", [1, 7, 2048])
def test_the_stored_form_made_a_run_of_links_at_a_time_reads_back_as_the_long_text(
        at_once: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Session 30: the short links are made and compressed LINKS_AT_ONCE at a time (never
    all at once); what is stored reads back as the root's long text."""
    monkeypatch.setattr(stored_values, "LINKS_AT_ONCE", at_once)
    ids = _ids(300, seed=at_once)
    held = _held(ids)
    text = values.dumps({**ROOT, "sessions": [Link.trusted(cell, SPACE) for cell in ids]})
    head, tail = root_parts({**ROOT, "sessions": held})
    stored = stored_values.encode_links(head, held.bodies, tail, SPACE)
    assert type(stored) is bytes and stored_values.decode(stored, SPACE) == text


def test_links_beyond_the_bound_wait_in_a_private_file_and_read_back_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Session 30: the bodies beyond SPILL_BYTES go to an unlinked 0600 file as they are
    added; runs, the digest and the stored form read them a run at a time, and they read
    back whole and equal to links never spilled."""
    ids = _ids(500, seed=5)
    whole = _held(ids)
    monkeypatch.setattr(root_links, "SPILL_BYTES", 1000)  # 23 links a run
    held = _held(ids)
    fd = held._spilled.fileno()
    assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o600 and os.fstat(fd).st_nlink == 0
    assert len(held._bodies) < 1000 and held._spilled_bytes == 43 * 500 - len(held._bodies)
    runs = list(held.runs())
    assert len(runs) > 20 and all(len(run) % 43 == 0 for run in runs) and b"".join(runs) == whole.bodies
    assert held.digest() == whole.digest() and held._spilled is not None  # read a run at a time
    head, tail = root_parts({**ROOT, "sessions": held})
    monkeypatch.setattr(stored_values, "LINKS_AT_ONCE", 7)
    stored = stored_values.encode_links(head, held.runs(), tail, SPACE, len(held))
    text = values.dumps({**ROOT, "sessions": [Link.trusted(cell, SPACE) for cell in ids]})
    assert type(stored) is bytes and stored_values.decode(stored, SPACE) == text
    assert list(held) == list(whole) and held._spilled is None  # read back whole, the file closed

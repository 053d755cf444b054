"""Stored forms made for a whole batch (stored_values.encode_many, lib._cells.deflate_many)
and on a second thread (graph_batch.py): the same stored values as the per-text path, a
batch written only once they are made, a failure making them the commit's error."""

from __future__ import annotations

import random
import threading
import zlib
from pathlib import Path

import pytest
from isal import isal_zlib

from lib.fabric import graph_batch, stored_values, value_decoding, values
from lib.fabric.cell_speedups import CELLS
from lib.fabric.graph_plan import plan_graph
from lib.fabric.schemas import scope
from lib.fabric.session_graph import GraphTarget
from lib.fabric.sqlite_store import SQLiteStore
from lib.fabric.store import Labels
from lib.fabric.values import Link

SPACE = "did:key:z6MkBatchStoredForms"
WRITER = "did:key:z6MkBatchWriter"
native = pytest.mark.skipif(not stored_values.ENCODES_WITHOUT_GIL, reason="lib._cells not built")


def _texts(count: int, seed: int = 5) -> list[str]:
    """Texts of every size class the store sees: under the compression bound, around it,
    whose streams span several of isal_zlib's output buffers (16 KiB, then doubled),
    non-ASCII, and ones that do not compress (kept as text)."""
    rng = random.Random(seed)
    words = ["word", "caf\u00e9", "\u65e5\u672c", "x" * 12, '{"k":[1,2]}', "\\n", "link"]
    out = []
    for n in range(count):
        size = rng.choice([10, 255, 256, 300, 2_000, 20_000, 90_000, 400_000 if n % 50 == 0 else 5_000])
        if n % 17 == 0:  # random letters: barely compressible
            out.append("".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=size)))
        else:
            out.append(" ".join(rng.choices(words, k=size // 4))[:size])
    return out


@native
def test_deflate_many_gives_isal_zlib_compress_bytes_and_none_where_compression_does_not_pay():
    texts = [t for t in _texts(600) if len(t) >= stored_values.COMPRESS_AT]
    got = CELLS.deflate_many(texts, stored_values.COMPRESS_LEVEL)
    same = 0
    for text, packed in zip(texts, got, strict=True):
        raw = text.encode("utf-8")
        want = isal_zlib.compress(raw, stored_values.COMPRESS_LEVEL)
        if packed is None:
            assert len(want) * 10 > len(raw) * 9
            continue
        assert len(packed) * 10 <= len(raw) * 9
        assert zlib.decompress(packed) == raw  # any zlib reads it
        same += packed == want
        if len(want) > 16 * 1024:  # a stream over several output buffers: the same calls
            assert packed == want
    kept = sum(p is not None for p in got)
    # ISA-L's bytes for a short text can depend on what its level buffer held before
    # (isal_zlib.compress's own differ so between calls); what they decompress to cannot
    assert kept > 400 and same >= kept - kept // 100


def test_encode_many_stores_what_encode_stores_for_each_text():
    link = values.dumps({"a": [Link("of:fid1:" + "A" * 43, SPACE)] * 3, "t": "word " * 80})
    texts = [*_texts(300, seed=9), link, "short", values.dumps({"t": "x" * 300})]
    many = stored_values.encode_many(texts, SPACE)
    for text, stored in zip(texts, many, strict=True):
        one = stored_values.encode(text, SPACE)
        assert type(stored) is type(one)
        assert stored_values.decode(stored, SPACE) == text
        if isinstance(one, str):
            assert stored == one


def test_encode_many_refuses_a_raw_marker_as_encode_does():
    with pytest.raises(ValueError, match="U\\+0001"):
        stored_values.encode_many(["ok", "bad \x01 text"], SPACE)


def _target(tmp_path: Path) -> GraphTarget:
    store = SQLiteStore(tmp_path / "fabric.db")
    return GraphTarget(store, SPACE, WRITER, WRITER, Labels.owned_by(WRITER))


def _graph(n: int):
    value = {"n": n, "events": [{"text": f"event {n} {i} " + "word " * 100} for i in range(4)]}
    return plan_graph({"test": "batch", "n": n}, value, scope(SPACE, WRITER, "test-batch", n=n))


def test_sealed_batches_are_committed_in_order_with_the_stored_forms_made_on_another_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(graph_batch, "MAX_SESSIONS", 2)
    target = _target(tmp_path)
    threads = []
    real = SQLiteStore.stored_forms

    def recording(self, space, texts):
        threads.append(threading.current_thread())
        return real(self, space, texts)

    monkeypatch.setattr(SQLiteStore, "stored_forms", recording)
    batch = graph_batch.GraphBatch(target)
    graphs = [_graph(n) for n in range(5)]
    background = stored_values.ENCODES_WITHOUT_GIL
    for graph in graphs:
        batch.add(graph)
        batch.end_session()
        if background:  # staged or sealed, not committed yet
            assert batch.pending(graph.root.id)
    # with the worker: the first batch, when the second was sealed; without: each at its seal
    assert batch.commits == (1 if background else 2)
    batch.flush()
    assert batch.commits == 3
    seqs = [target.store._read_row(SPACE, g.root.id)[0] for g in graphs]
    assert seqs == sorted(seqs) and seqs[0] < seqs[2] < seqs[4]
    for graph in graphs:
        for cell in graph.cells():
            assert target.store.read(SPACE, cell.id).value == value_decoding.loads(values.dumps(cell.value))
    if background:
        assert any(t is not threading.main_thread() for t in threads)


class FakeFault(Exception):
    pass


def test_a_fake_failure_making_stored_forms_is_the_commits_error_and_writes_nothing_of_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(graph_batch, "MAX_SESSIONS", 2)
    target = _target(tmp_path)
    calls = []
    real = SQLiteStore.stored_forms

    def second_fails(self, space, texts):
        calls.append(threading.current_thread())
        if len(calls) == 2:
            raise FakeFault("compression failed")
        return real(self, space, texts)

    monkeypatch.setattr(SQLiteStore, "stored_forms", second_fails)
    batch = graph_batch.GraphBatch(target)
    graphs = [_graph(n) for n in range(6)]
    with pytest.raises(FakeFault):
        for graph in graphs:
            batch.add(graph)
            batch.end_session()
        batch.flush()
    batch.discard()
    store = target.store
    assert all(store.read(SPACE, c.id) is not None for g in graphs[:2] for c in g.cells())
    assert all(store.read(SPACE, c.id) is None for g in graphs[2:] for c in g.cells())

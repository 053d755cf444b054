"""`agentctl store copy` and lib/fabric/store_copy.py: a space copied SQLite -> PostgreSQL
and back, with its cells, labels, deletions and sequences; resumable; verified."""

from __future__ import annotations

import pytest

from lib.fabric.store import Labels, open_store
from lib.fabric.store_copy import (
    BATCH,
    CopyMismatch,
    CopyReport,
    SameStore,
    copy_space,
    verify_copy,
)
from tests.support.cli import agentctl_env, run

SPACE = "did:key:z6MkCopySpace"
OTHER = "did:key:z6MkCopyOther"
ME = "did:key:z6MkCopyMe"
HANDLER = "did:key:z6MkCopyHandler"


def fill(store, n: int = BATCH + 30) -> None:
    """n cells over two writers, one cell deleted, sequences, another space's cell."""
    with store.transaction(SPACE, ME) as tx:
        for i in range(n):
            tx.write(f"of:cell-{i:04d}", {"i": i, "text": "x" * (i % 7), "list": [i, None, True]})
        tx.write("of:deleted", "soon gone")
        tx.commit()
    with store.transaction(SPACE, HANDLER) as tx:
        tx.write("of:handled", {"by": "handler"}, Labels((ME,), (HANDLER,)))
        tx.commit()
    with store.transaction(SPACE, ME) as tx:
        tx.delete("of:deleted")
        tx.commit()
    for _ in range(5):
        store.next_sequence(SPACE, "observation")
    store.next_sequence(SPACE, "other")
    with store.transaction(OTHER, ME) as tx:
        tx.write("of:elsewhere", 1)
        tx.commit()


def snapshot(store, space: str = SPACE) -> dict:
    ids = [cell for cell, _ in store.changes_since(space, 0)]
    return {cell: (doc.value, doc.labels) for cell, doc in store.iter_many(space, ids)}


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'fabric.sqlite3'}"


@pytest.mark.parametrize("direction", ["sqlite-to-postgres", "postgres-to-sqlite"])
def test_a_space_is_copied_whole_and_verified(direction, sqlite_url, postgres_url):
    from_url, to_url = (sqlite_url, postgres_url) if direction == "sqlite-to-postgres" else (postgres_url, sqlite_url)
    source, destination = open_store(from_url), open_store(to_url)
    try:
        fill(source)
        report = copy_space(source, destination, SPACE)
        assert report.verified
        assert report.cells == BATCH + 31 and report.copied == BATCH + 31 and report.unchanged == 0
        assert report.sequences == {"observation": 5, "other": 1}
        assert snapshot(destination) == snapshot(source)
        assert destination.read(SPACE, "of:deleted") is None
        assert destination.read(SPACE, "of:handled").labels == Labels((ME,), (HANDLER,))
        assert destination.next_sequence(SPACE, "observation") == 6  # never gives 1..5 again
        assert snapshot(destination, OTHER) == {}  # only the space asked for
    finally:
        source.close()
        destination.close()


def test_a_copy_run_again_resumes_and_carries_deletions_and_changes(sqlite_url, postgres_url):
    source, destination = open_store(sqlite_url), open_store(postgres_url)
    try:
        fill(source)
        copy_space(source, destination, SPACE)
        with source.transaction(SPACE, ME) as tx:
            tx.write("of:cell-0001", "changed")
            tx.delete("of:cell-0002")
            tx.write("of:new", "new")
            tx.commit()
        again = copy_space(source, destination, SPACE)
        assert (again.copied, again.deleted, again.unchanged) == (2, 1, BATCH + 29)
        assert snapshot(destination) == snapshot(source)
    finally:
        source.close()
        destination.close()


def test_an_interrupted_copy_copies_only_what_is_missing_when_run_again(sqlite_url, postgres_url):
    source, destination = open_store(sqlite_url), open_store(postgres_url)
    try:
        fill(source)
        ids = [cell for cell, _ in source.changes_since(SPACE, 0)][:BATCH]  # the first batch only
        with destination.transaction(SPACE, ME) as tx:
            for cell, doc in source.iter_many(SPACE, ids):
                tx.write(cell, doc.value, doc.labels)
            tx.commit()
        report = copy_space(source, destination, SPACE)
        assert report.unchanged == len([c for c in ids if source.read(SPACE, c) is not None])
        assert report.copied == report.cells - report.unchanged
        assert report.verified and snapshot(destination) == snapshot(source)
    finally:
        source.close()
        destination.close()


def test_verification_names_cells_that_differ_and_extra_cells(sqlite_url, postgres_url):
    source, destination = open_store(sqlite_url), open_store(postgres_url)
    try:
        fill(source, n=3)
        copy_space(source, destination, SPACE)
        with destination.transaction(SPACE, ME) as tx:
            tx.write("of:cell-0000", "tampered")
            tx.write("of:extra", "not in the source")
            tx.commit()
        with pytest.raises(CopyMismatch) as caught:
            verify_copy(source, destination, SPACE, CopyReport(SPACE))
        assert "of:cell-0000" in caught.value.message
        assert "holds 5 live cells, the source 4" in caught.value.message
    finally:
        source.close()
        destination.close()


def test_copying_a_store_onto_itself_is_refused(postgres_url):
    one, again = open_store(postgres_url), open_store(postgres_url)
    try:
        with pytest.raises(SameStore):
            copy_space(one, again, SPACE)
    finally:
        one.close()
        again.close()


def test_agentctl_store_copy_copies_and_reports_one_record(tmp_path, sqlite_url, postgres_url):
    source = open_store(sqlite_url)
    fill(source, n=10)
    source.close()
    env = agentctl_env(tmp_path / "state", AGENTCTL_SPACE=SPACE)
    done = run(["store", "copy", "sqlite:fabric.sqlite3", postgres_url], env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [record] = done.of("store-copy")
    assert (record["cells"], record["copied"], record["verified"]) == (11, 11, True)
    back = tmp_path / "back.sqlite3"
    done = run(["store", "copy", postgres_url, f"sqlite://{back}"], env)
    assert done.returncode == 0, done.stderr
    with open_store(sqlite_url) as original, open_store(f"sqlite://{back}") as copied:
        assert snapshot(copied) == snapshot(original)
    again = run(["store", "copy", "sqlite:fabric.sqlite3", postgres_url], env, cwd=tmp_path)
    assert again.of("store-copy")[0]["unchanged"] == 11


def test_agentctl_store_copy_bad_input_is_one_line(tmp_path, postgres_url):
    env = agentctl_env(tmp_path / "state", AGENTCTL_SPACE=SPACE)
    missing = run(["store", "copy", f"sqlite://{tmp_path}/none.sqlite3", postgres_url], env)
    assert missing.returncode == 5 and len(missing.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "none.sqlite3").exists()
    unknown = run(["store", "copy", "mysql://x/y", postgres_url], env)
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1
    same = run(["store", "copy", postgres_url, postgres_url], env)
    assert same.returncode == 2 and "same store" in same.stderr


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request, sqlite_url):
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else sqlite_url
    store = open_store(url)
    yield store
    store.close()


def test_sequences_are_listed_and_advanced_but_never_lowered(any_store):
    assert any_store.sequences(SPACE) == {}
    any_store.next_sequence(SPACE, "observation")
    any_store.advance_sequence(SPACE, "observation", 40)
    any_store.advance_sequence(SPACE, "observation", 7)  # lower: no change
    any_store.advance_sequence(SPACE, "fresh", 3)
    assert any_store.sequences(SPACE) == {"observation": 40, "fresh": 3}
    assert any_store.next_sequence(SPACE, "observation") == 41
    assert any_store.sequences(OTHER) == {}


def test_the_change_wait_returns_when_woken(any_store):
    """The contract's wait: with nothing committed it returns once `wake` is set (the
    timeout is far beyond the guard, so only the wake can end it in time)."""
    import threading

    wake, returned = threading.Event(), threading.Event()
    thread = threading.Thread(
        target=lambda: (any_store.wait_for_change(SPACE, 0, 600, wake), returned.set()), daemon=True
    )
    thread.start()
    wake.set()
    assert returned.wait(60)

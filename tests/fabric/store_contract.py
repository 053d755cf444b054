"""The store contract as a reusable suite: every backend subclasses StoreContract.

A subclass (named Test...) provides two fixtures:
  store_url  a URL that open_store() in another process opens as the same store
  store      an open store for that URL (closed after the test)
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lib.fabric.cell_id import cell_id
from lib.fabric.store import Document, Labels, Store, open_store
from lib.fabric.store_errors import ConflictError, PreconditionFailed, StoreError, WriteDenied
from lib.fabric.values import Link
from lib.hashing import HOLE, UNDEFINED, BigInt, content_hash, value_hash
from tests.fabric.holders import GUARD
from tests.fabric.lock_contract import StoreLockContract

SPACE = "did:key:z6MkSpaceOne"
OTHER_SPACE = "did:key:z6MkSpaceTwo"
ME = "did:key:z6MkMe"
HANDLER = "did:key:z6MkHandler"
A = cell_id("contract/a")
B = cell_id("contract/b")
C = cell_id("contract/c")
REPO = Path(__file__).resolve().parents[2]


def put(store: Store, cell: str, value, writer: str = ME, labels: Labels | None = None) -> int:
    with store.transaction(SPACE, writer) as tx:
        tx.write(cell, value, labels)
        return tx.commit()


def value_of(store: Store, cell: str, space: str = SPACE):
    document = store.read(space, cell)
    return None if document is None else document.value


def wait_in_thread(store: Store, head: int, wake: threading.Event) -> threading.Event:
    """Start `store.wait_for_change(SPACE, head, 600, wake)` on a thread; the returned
    event is set when the wait returns (600 s is far beyond any test's guard)."""
    returned = threading.Event()

    def wait() -> None:
        store.wait_for_change(SPACE, head, 600, wake)
        returned.set()

    threading.Thread(target=wait, daemon=True).start()
    return returned


# A child process that commits n writes of its own cells, n read-modify-write
# increments of one shared counter cell (retrying conflicts), and allocates n named
# sequence numbers, after the parent says go.
CHILD = r"""
import json, sys
from lib.fabric.cell_id import cell_id
from lib.fabric.store import open_store
from lib.fabric.store_errors import ConflictError

url, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
space, me, shared = sys.argv[4], sys.argv[5], sys.argv[6]
store = open_store(url)
print("ready", flush=True)
sys.stdin.readline()
writes, counters, conflicts = {}, [], 0
for i in range(n):
    mine = cell_id(f"{name}/{i}")
    with store.transaction(space, me) as tx:
        tx.write(mine, {"by": name, "i": i})
        writes[mine] = tx.commit()
    while True:
        try:
            with store.transaction(space, me) as tx:
                doc = tx.read(shared)
                tx.write(shared, {"count": doc.value["count"] + 1})
                tx.commit()
            break
        except ConflictError:
            conflicts += 1
    counters.append(store.next_sequence(space, "observation"))
store.close()
print(json.dumps({"writes": writes, "counters": counters, "conflicts": conflicts}))
"""


def run_child(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, *args],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


class StoreContract(StoreLockContract):
    def listen_for_changes(self, store) -> None:
        """Make `store` ready to hear commits from other handles before a test waits.
        A backend that listens for pushes (PostgreSQL) starts its listener here."""

    # ---- documents and sequence numbers

    def test_a_cell_never_written_reads_as_none_and_the_head_is_zero(self, store):
        assert store.read(SPACE, A) is None
        assert store.head(SPACE) == 0
        assert store.changes_since(SPACE, 0) == []
        assert store.read_many(SPACE, [A, B]) == {}

    def test_every_document_of_a_commit_carries_the_new_sequence_number(self, store):
        with store.transaction(SPACE, ME) as tx:
            tx.write(A, {"n": 1})
            tx.write(B, [1, 2])
            assert tx.commit() == 1
        assert store.read(SPACE, A) == Document({"n": 1}, Labels((ME,), (ME,)), 1)
        assert store.read(SPACE, B).seq == 1
        assert put(store, C, "third") == 2
        assert store.head(SPACE) == 2
        assert store.read(SPACE, A).seq == 1

    def test_every_kind_of_value_is_stored_and_read_back(self, store):
        link = Link(B, SPACE, ("rows", 0))
        value = {
            "undefined": UNDEFINED,
            "big": 2**80,
            "small bigint": BigInt(7),
            "bytes": b"\x00\xff",
            "nan": math.nan,
            "negative zero": -0.0,
            "holes": [1, HOLE, 3],
            "link": link,
            "/slash": {"/nested": True},
            "text": "naïve ☃ \ud800",
        }
        put(store, A, value)
        back = value_of(store, A)
        assert value_hash(back) == value_hash(value)
        assert back["link"] == link and type(back["small bigint"]) is BigInt
        for scalar in (None, True, 0, -3.5, "x", [], {}):
            put(store, B, scalar)
            assert value_of(store, B) == scalar

    def test_spaces_are_independent(self, store):
        put(store, A, "one")
        with store.transaction(OTHER_SPACE, ME) as tx:
            tx.write(A, "two")
            assert tx.commit() == 1
        assert value_of(store, A) == "one"
        assert value_of(store, A, OTHER_SPACE) == "two"
        assert store.head(SPACE) == store.head(OTHER_SPACE) == 1

    def test_read_many_returns_the_cells_that_exist(self, store):
        put(store, A, 1)
        put(store, B, 2)
        with store.transaction(SPACE, ME) as tx:
            tx.delete(B)
            tx.commit()
        assert {k: d.value for k, d in store.read_many(SPACE, [A, B, C, A]).items()} == {A: 1}
        assert [k for k, _ in store.iter_many(SPACE, [C, A])] == [A]

    def test_iter_many_leaves_a_kept_top_level_field_as_its_fvj1_json(self, store):
        link = Link(B, SPACE)
        put(store, A, {"previews": [link, {"n": 1}], "manifest": link, "deep": {"previews": [link]}})
        put(store, C, [link])
        found = dict(store.iter_many(SPACE, [A, C], keep_fields=frozenset({"previews"})))
        row = found[A].value
        assert row["previews"] == [{"/quote": link.to_json()}, {"n": 1}]  # as written, undecoded
        assert row["manifest"] == link and row["deep"] == {"previews": [link]}  # the rest decoded
        assert found[C].value == [link]  # not an object: nothing to keep
        assert store.read_many(SPACE, [A])[A].value["previews"] == [link, {"n": 1}]

    def test_existing_names_the_cells_that_hold_a_value(self, store):
        assert store.existing(SPACE, [A, B]) == set()
        put(store, A, 1)
        put(store, B, 2)
        with store.transaction(SPACE, ME) as tx:
            tx.delete(B)
            tx.commit()
        assert store.existing(SPACE, [A, B, C, A]) == {A}
        assert store.existing(OTHER_SPACE, [A]) == set()

    def test_changes_since_lists_written_and_deleted_cells_in_sequence_order(self, store):
        put(store, A, 1)
        put(store, B, 2)
        put(store, A, 3)
        with store.transaction(SPACE, ME) as tx:
            tx.delete(B)
            tx.write(C, 4)
            tx.commit()
        assert store.changes_since(SPACE, 0) == [(A, 3)] + sorted([(B, 4), (C, 4)])
        assert store.changes_since(SPACE, 3) == sorted([(B, 4), (C, 4)])
        assert store.changes_since(SPACE, 4) == []
        assert store.read(SPACE, B) is None

    def test_a_store_reopened_from_its_url_keeps_its_documents(self, store, store_url):
        put(store, A, {"kept": True})
        again = open_store(store_url)
        try:
            assert value_of(again, A) == {"kept": True}
            assert again.head(SPACE) == 1
        finally:
            again.close()

    # ---- transactions

    def test_a_transaction_sees_its_own_writes_before_commit(self, store):
        put(store, A, {"x": 1, "y": 2})
        with store.transaction(SPACE, ME) as tx:
            tx.patch(A, {"z": 3}, delete=["x"])
            assert tx.read(A).value == {"y": 2, "z": 3}
            tx.write(B, [1])
            assert tx.read(B).value == [1]
            tx.delete(A)
            assert tx.read(A) is None
            assert store.read(SPACE, B) is None  # nothing visible outside yet
            tx.commit()
        assert value_of(store, A) is None and value_of(store, B) == [1]

    def test_leaving_a_transaction_without_commit_changes_nothing(self, store):
        with store.transaction(SPACE, ME) as tx:
            tx.write(A, 1)
        assert store.read(SPACE, A) is None and store.head(SPACE) == 0
        with pytest.raises(StoreError) as caught:
            tx.commit()
        assert caught.value.code == "store-tx-closed"

    def test_a_transaction_commits_at_most_once(self, store):
        with store.transaction(SPACE, ME) as tx:
            tx.write(A, 1)
            tx.commit()
            with pytest.raises(StoreError) as caught:
                tx.write(B, 2)
            assert caught.value.code == "store-tx-closed"

    def test_a_commit_without_writes_checks_its_reads_and_returns_the_head(self, store):
        put(store, A, 1)
        with store.transaction(SPACE, ME) as tx:
            tx.read(A)
            assert tx.commit() == 1
        with store.transaction(SPACE, ME) as tx:
            tx.read(A)
            put(store, A, 2)
            with pytest.raises(ConflictError):
                tx.commit()

    def test_a_commit_without_writes_checks_its_preconditions_and_creates_nothing(self, store):
        with store.transaction(OTHER_SPACE, ME) as tx:
            assert tx.read(A) is None
            tx.require_absent(B)
            assert tx.commit() == 0
        assert store.head(OTHER_SPACE) == 0 and store.changes_since(OTHER_SPACE, 0) == []
        put(store, A, 1)
        with store.transaction(SPACE, ME) as tx:
            tx.require_absent(A)
            with pytest.raises(PreconditionFailed):
                tx.commit()
        with store.transaction(SPACE, ME) as tx:
            tx.require_value_hash(A, value_hash(2))
            with pytest.raises(PreconditionFailed):
                tx.commit()

    def test_a_commit_whose_read_cell_moved_on_is_rejected_and_changes_nothing(self, store):
        put(store, A, {"count": 0})
        first = store.transaction(SPACE, ME)
        second = store.transaction(SPACE, ME)
        seen = first.read(A).value["count"]
        second.write(A, {"count": second.read(A).value["count"] + 1})
        assert second.commit() == 2
        first.write(A, {"count": seen + 1})
        first.write(B, "side effect")
        with pytest.raises(ConflictError) as caught:
            first.commit()
        assert caught.value.code == "store-conflict" and A in caught.value.message
        assert value_of(store, A) == {"count": 1}
        assert store.read(SPACE, B) is None
        assert store.head(SPACE) == 2

    def test_a_cell_created_after_a_transaction_saw_it_absent_is_a_conflict(self, store):
        with store.transaction(SPACE, ME) as tx:
            assert tx.read(A) is None
            put(store, A, "created meanwhile")
            tx.write(A, "mine")
            with pytest.raises(ConflictError):
                tx.commit()
        assert value_of(store, A) == "created meanwhile"

    def test_a_cell_deleted_after_a_transaction_read_it_is_a_conflict(self, store):
        put(store, A, 1)
        with store.transaction(SPACE, ME) as tx:
            tx.read(A)
            with store.transaction(SPACE, ME) as other:
                other.delete(A)
                other.commit()
            tx.write(B, 2)
            with pytest.raises(ConflictError):
                tx.commit()
        assert store.read(SPACE, B) is None

    def test_reading_a_cell_again_after_it_changed_fails_at_once(self, store):
        put(store, A, 1)
        with store.transaction(SPACE, ME) as tx:
            tx.read(A)
            put(store, A, 2)
            with pytest.raises(ConflictError):
                tx.read(A)

    # ---- preconditions

    def test_require_absent_fails_when_the_cell_holds_a_value(self, store):
        put(store, A, 1)
        with store.transaction(SPACE, ME) as tx:
            tx.require_absent(A)
            tx.write(B, 2)
            with pytest.raises(PreconditionFailed) as caught:
                tx.commit()
        assert caught.value.code == "store-precondition-failed"
        assert store.read(SPACE, B) is None
        with store.transaction(SPACE, ME) as tx:
            tx.delete(A)
            tx.commit()
        with store.transaction(SPACE, ME) as tx:
            tx.require_absent(A)
            tx.write(A, "again")
            tx.commit()
        assert value_of(store, A) == "again"

    def test_require_value_hash_accepts_either_hash_form_of_the_current_value(self, store):
        put(store, A, {"v": [1, 2]})
        for expected in (value_hash({"v": [1, 2]}), content_hash({"v": [1, 2]})):
            with store.transaction(SPACE, ME) as tx:
                tx.require_value_hash(A, expected)
                tx.write(B, expected if isinstance(expected, str) else "raw")
                tx.commit()
        for wrong, cell in ((value_hash({"v": [2, 1]}), A), (value_hash(None), C)):
            with store.transaction(SPACE, ME) as tx:
                tx.require_value_hash(cell, wrong)
                tx.write(B, "never")
                with pytest.raises(PreconditionFailed):
                    tx.commit()
        assert value_of(store, B) == content_hash({"v": [1, 2]})

    # ---- labels and write permission

    def test_a_write_without_labels_keeps_the_cells_labels(self, store):
        put(store, A, 1)
        assert store.read(SPACE, A).labels == Labels((ME,), (ME,))
        shared = Labels((ME,), (ME, HANDLER))
        put(store, A, 2, labels=shared)
        put(store, A, 3, writer=HANDLER)
        assert store.read(SPACE, A) == Document(3, shared, 3)

    def test_a_writer_missing_from_the_integrity_labels_is_denied_and_nothing_changes(self, store):
        put(store, A, "queue", labels=Labels((ME,), (HANDLER,)))
        with store.transaction(SPACE, ME) as tx:
            tx.write(B, "allowed on its own")
            tx.write(A, "forged")
            with pytest.raises(WriteDenied) as caught:
                tx.commit()
        assert caught.value.code == "store-write-denied" and ME in caught.value.message
        assert value_of(store, A) == "queue" and store.read(SPACE, B) is None
        for change in ("patch", "delete"):
            with store.transaction(SPACE, ME) as tx:
                if change == "patch":
                    tx.patch(A, {"x": 1})
                else:
                    tx.delete(A)
                with pytest.raises(WriteDenied):
                    tx.commit()
        put(store, A, "from its handler", writer=HANDLER)
        assert value_of(store, A) == "from its handler"

    def test_streamed_writes_commit_with_the_buffered_ones_and_are_read_again_on_a_second_attempt(self, store):
        cells = [(cell_id(f"contract/streamed/{i}"), f'{{"n":{i}}}') for i in range(1234)]
        put(store, C, "before")
        with store.transaction(SPACE, ME) as tx:
            tx.write(A, "buffered")
            tx.write_streamed(cells, Labels((ME,), (ME, HANDLER)))
            tx.write_streamed([(C, '"streamed over"')])  # an existing cell keeps its labels
            seq = tx.commit()
        assert value_of(store, A) == "buffered" and value_of(store, C) == "streamed over"
        assert store.read_texts(SPACE, [A, C, B]) == {A: '"buffered"', C: '"streamed over"'}
        documents = store.read_many(SPACE, [cell for cell, _ in cells])
        assert [documents[cell].value for cell, _ in cells] == [{"n": i} for i in range(1234)]
        assert {documents[cell].seq for cell, _ in cells} == {seq}
        assert documents[cells[0][0]].labels == Labels((ME,), (ME, HANDLER))
        assert store.read(SPACE, C).labels == Labels.owned_by(ME)

    def test_streamed_writes_are_checked_like_buffered_ones_and_a_failure_writes_none(self, store):
        cells = [(cell_id(f"contract/streamed/{i}"), f"{i}") for i in range(1200)]
        put(store, A, "queue", labels=Labels((ME,), (HANDLER,)))
        with store.transaction(SPACE, ME) as tx:
            tx.write_streamed([*cells, (A, '"forged"')])  # the denied cell in a later batch
            with pytest.raises(WriteDenied):
                tx.commit()
        assert value_of(store, A) == "queue" and not store.read_many(SPACE, [cell for cell, _ in cells])
        with store.transaction(SPACE, ME) as tx:
            tx.observe(B)
            put(store, B, "moved")
            tx.write_streamed(cells)
            with pytest.raises(ConflictError):
                tx.commit()
        assert not store.read_many(SPACE, [cell for cell, _ in cells])

    def test_a_deleted_cell_keeps_its_labels_so_only_its_writers_recreate_it(self, store):
        put(store, A, "receipt", labels=Labels((ME,), (HANDLER,)))
        with store.transaction(SPACE, HANDLER) as tx:
            tx.delete(A)
            tx.commit()
        with store.transaction(SPACE, ME) as tx:
            tx.write(A, "squatter")
            with pytest.raises(WriteDenied):
                tx.commit()
        put(store, A, "back", writer=HANDLER)
        assert store.read(SPACE, A).labels == Labels((ME,), (HANDLER,))

    # ---- field patches

    def test_a_patch_sets_and_deletes_fields_and_keeps_the_others(self, store):
        put(store, A, {"keep": 1, "drop": 2, "change": 3})
        with store.transaction(SPACE, ME) as tx:
            tx.patch(A, {"change": UNDEFINED, "new": [4]}, delete=["drop", "absent"])
            tx.commit()
        assert value_of(store, A) == {"keep": 1, "change": UNDEFINED, "new": [4]}

    def test_patches_of_unread_fields_from_two_transactions_both_land(self, store):
        put(store, A, {"a": 0, "b": 0})
        first = store.transaction(SPACE, ME)
        second = store.transaction(SPACE, ME)
        first.patch(A, {"a": 1})
        second.patch(A, {"b": 2})
        second.commit()
        first.commit()
        assert value_of(store, A) == {"a": 1, "b": 2}

    def test_patches_compose_within_a_transaction(self, store):
        put(store, A, {"a": 0})
        with store.transaction(SPACE, ME) as tx:
            tx.patch(A, {"b": 1, "c": 1})
            tx.patch(A, {"a": 2}, delete=["b"])
            tx.write(B, {"x": 1})
            tx.patch(B, {"y": 2})
            tx.commit()
        assert value_of(store, A) == {"a": 2, "c": 1}
        assert value_of(store, B) == {"x": 1, "y": 2}

    def test_a_patch_of_an_absent_cell_or_one_holding_no_object_fails(self, store):
        put(store, B, [1, 2])
        for cell in (A, B):
            with store.transaction(SPACE, ME) as tx:
                tx.patch(cell, {"x": 1})
                tx.write(C, "never")
                with pytest.raises(PreconditionFailed):
                    tx.commit()
        assert store.read(SPACE, C) is None

    # ---- named sequences

    def test_named_sequences_count_from_one_per_space_and_name(self, store):
        assert [store.next_sequence(SPACE, "observation") for _ in range(3)] == [1, 2, 3]
        assert store.next_sequence(SPACE, "other") == 1
        assert store.next_sequence(OTHER_SPACE, "observation") == 1
        assert store.head(SPACE) == 0  # counters are not cell writes

    def test_the_store_id_is_the_same_for_every_handle_and_differs_between_stores(
        self, store, store_url, tmp_path
    ):
        other_handle = open_store(store_url)
        another = open_store(f"sqlite:///{tmp_path}/another.db")
        try:
            assert store.store_id() == other_handle.store_id() == store.store_id()
            assert another.store_id() != store.store_id()
        finally:
            other_handle.close()
            another.close()

    # ---- concurrency

    def test_threads_incrementing_one_cell_lose_no_update(self, store):
        put(store, A, {"count": 0})
        threads, per_thread = 4, 25
        barrier = threading.Barrier(threads)
        failures: list[BaseException] = []

        def work() -> None:
            try:
                barrier.wait()
                for _ in range(per_thread):
                    while True:
                        try:
                            with store.transaction(SPACE, ME) as tx:
                                tx.write(A, {"count": tx.read(A).value["count"] + 1})
                                tx.commit()
                            break
                        except ConflictError:
                            continue
            except BaseException as exc:  # surfaced by the assertion below
                failures.append(exc)

        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert failures == []
        assert value_of(store, A) == {"count": threads * per_thread}
        assert store.head(SPACE) == 1 + threads * per_thread

    def test_commits_from_two_processes_serialize_and_sequences_never_repeat(
        self, store, store_url
    ):
        put(store, A, {"count": 0})
        n = 200
        children = [
            run_child([store_url, name, str(n), SPACE, ME, A]) for name in ("left", "right")
        ]
        for child in children:
            assert child.stdout.readline().strip() == "ready"
        for child in children:  # both are waiting: release them together
            child.stdin.write("go\n")
            child.stdin.flush()
        results = []
        for child in children:
            out, _ = child.communicate(timeout=120)
            assert child.returncode == 0
            results.append(json.loads(out))
        seqs = [seq for r in results for seq in r["writes"].values()]
        # 1 is the setup; every other commit (own writes and increments) took its own seq
        assert len(set(seqs)) == 2 * n
        assert store.head(SPACE) == 1 + 4 * n
        assert value_of(store, A) == {"count": 2 * n}
        for result in results:
            for cell, seq in result["writes"].items():
                assert store.read(SPACE, cell).seq == seq
        counters = sorted(c for r in results for c in r["counters"])
        assert counters == list(range(1, 2 * n + 1))

    def test_a_commit_conflicts_with_a_write_another_process_made_after_its_read(
        self, store, store_url
    ):
        put(store, A, {"count": 0})
        with store.transaction(SPACE, ME) as tx:
            seen = tx.read(A).value["count"]
            child = run_child([store_url, "other", "1", SPACE, ME, A])
            assert child.stdout.readline().strip() == "ready"
            out, _ = child.communicate("go\n", timeout=120)
            assert child.returncode == 0
            tx.write(A, {"count": seen + 10})
            with pytest.raises(ConflictError):
                tx.commit()
        assert value_of(store, A) == {"count": 1}

    # ---- the wake hook (Store.wait_for_change)
    # The waits use a 600 s timeout, far beyond the guard, so a wait that only timed
    # out fails the test: no timing is asserted.

    def test_a_waiter_is_woken_by_a_commit_from_another_handle(self, store, store_url):
        writer = open_store(store_url)
        try:
            put(writer, cell_id("contract/first"), 1)
            head = store.head(SPACE)
            self.listen_for_changes(store)
            wake = threading.Event()
            returned = wait_in_thread(store, head, wake)
            put(writer, A, {"from": "another handle"})
            assert returned.wait(GUARD), "the waiter did not hear of the commit"
            assert store.changes_since(SPACE, head) == [(A, head + 1)]
        finally:
            wake.set()
            writer.close()

    def test_a_wait_returns_at_once_when_the_head_already_moved(self, store):
        put(store, cell_id("contract/first"), 1)
        head = store.head(SPACE)
        put(store, A, 2)
        returned = wait_in_thread(store, head, threading.Event())
        assert returned.wait(GUARD), "a wait for a change already made did not return"

    def test_setting_the_wake_event_ends_a_wait(self, store):
        head = store.head(SPACE)
        self.listen_for_changes(store)
        wake = threading.Event()
        returned = wait_in_thread(store, head, wake)
        wake.set()
        assert returned.wait(GUARD), "setting the wake event did not end the wait"
        assert store.head(SPACE) == head

"""The store contract: spaces of cells, documents, and optimistic transactions.

A space (named by a DID) holds cells (named by ID, see cell_id.py). A cell's
document is its value, its labels and the space-wide sequence number of its
last write. Every commit that writes anything takes the next sequence number
of its space, and every document it writes carries that number.

A `Transaction` reads documents (remembering the version each read saw),
buffers writes, and commits them atomically. The commit is rejected, and
nothing changes, when
  - a document it read has moved on since (ConflictError): rewritten,
    deleted, or created after the transaction saw it absent;
  - a precondition fails (PreconditionFailed): `require_absent`,
    `require_value_hash`, or a `patch` of a cell that holds no object;
  - it writes a cell whose integrity labels do not name the transaction's
    writer (WriteDenied). A cell that never existed may be created by anyone.

Backends implement `_read_row` and `_commit`; the commit rules themselves are
decided once, in `resolve_commit` (commit_rules.py), so every backend enforces the
same ones. A
commit that writes nothing takes no write lock: readers never wait for writers.
A store also provides named cross-process locks per space (`Store.lock`).
Backends: `sqlite_store.SQLiteStore` (embedded default) and
`postgres_store.PostgresStore` (shared between machines). `open_store(url)`
picks one by URL. `tests/fabric/store_contract.py` is the suite every backend
must pass.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from lib.fabric import value_decoding, values
from lib.fabric.commit_rules import CommitPlan, Delete, Patch, Write, apply_patch
from lib.fabric.documents import Document, Labels
from lib.fabric.store_errors import (
    ConflictError,
    PreconditionFailed,
    StoreError,
    StoreUrlError,
)
from lib.fabric.store_lock import DEFAULT_TIMEOUT_SECONDS, OnWait, StoreLock


class Transaction:
    """Reads, preconditions and buffered writes against one space, committed at once.

    Use it as a context manager and call `commit()` inside: leaving the block
    without committing discards the writes. One thread uses a transaction; a
    transaction commits at most once, and is closed after a commit or a failure.
    """

    def __init__(self, store: Store, space: str, writer: str) -> None:
        self._store = store
        self._plan = CommitPlan(space, writer)
        self._closed = False
        self._written_bytes = 0

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._closed = True

    @property
    def space(self) -> str:
        return self._plan.space

    @property
    def writer(self) -> str:
        return self._plan.writer

    def _open(self) -> CommitPlan:
        if self._closed:
            raise StoreError(
                "store-tx-closed",
                "this transaction is already committed or closed",
            )
        return self._plan

    def read(self, cell_id: str) -> Document | None:
        """The cell's document as this transaction sees it, its own writes included.

        The version read joins the read set, so the commit fails if the cell
        changes before it. A document overlaid by a buffered write keeps the
        seq it was read at (the write has no seq until commit).
        """
        plan = self._open()
        version, document = self._store._read_row(plan.space, cell_id)
        seen = plan.reads.setdefault(cell_id, version)
        if seen != version:
            raise ConflictError("store-conflict", f"cell changed while this transaction was reading it: {cell_id}")
        op = plan.ops.get(cell_id)
        if op is None:
            return document
        if isinstance(op, Delete):
            return None
        if isinstance(op, Write):
            labels = op.labels or (document.labels if document else Labels.owned_by(plan.writer))
            return Document(value_decoding.loads(op.text), labels, version)
        if document is None:
            raise PreconditionFailed("store-precondition-failed", f"cannot patch fields of an absent cell: {cell_id}")
        return Document(apply_patch(cell_id, document.value, op), document.labels, version)

    def observe(self, cell_id: str) -> int:
        """Add the cell's current version to the read set without decoding its value
        (0 for a cell never written): the commit fails if the cell changes before it."""
        plan = self._open()
        version = self._store._read_version(plan.space, cell_id)
        seen = plan.reads.setdefault(cell_id, version)
        if seen != version:
            raise ConflictError("store-conflict", f"cell changed while this transaction was reading it: {cell_id}")
        return version

    def write(
        self, cell_id: str, value: Any, labels: Labels | None = None, *, text: str | None = None,
        stored: str | bytes | None = None,
    ) -> None:
        """Replace the cell's whole value; labels None keeps the existing labels
        (a new cell is owned by, and writable by, the writer). `text`, when given, is
        `values.dumps(value)` already made by the caller (the receipt index root,
        assembled from texts it keeps per row), so the value is not encoded again.
        `stored`, with `text`, is the store's `stored_forms` of it in this space, made
        ahead (graph_batch.py: on another thread), so the commit does not make it."""
        if text is None:
            text = values.dumps(value)
        self._open().ops[cell_id] = Write(text, labels, stored)
        self._written_bytes += len(text)

    def write_stored(self, cell_id: str, stored: str | bytes, labels: Labels | None, length: int) -> None:
        """Replace the cell's whole value with one given only as this store's stored form
        (`Store.stored_form_of_links`) of an fvj1 text of `length` characters: the text
        itself is never made nor held (an index root of 25,000 rows: 3.7 MB). Nothing in
        this transaction reads that cell back afterwards (`read` would not decode it)."""
        self._open().ops[cell_id] = Write("", labels, stored)
        self._written_bytes += length

    def write_streamed(self, cells: Iterable[tuple[str, str]], labels: Labels | None = None) -> None:
        """Replace the whole value of each cell of `cells`, (cell ID, fvj1 text) pairs,
        with `labels` as `write` takes them: pairs read only at commit (a batch at a time
        by a backend that `streams_writes`), so the transaction never holds them all (the
        index commit's changed rows: held_cells.py). `cells` is iterable again (a commit
        may be attempted twice) and names no cell this transaction writes otherwise."""
        self._open().streamed.append((cells, labels))

    @property
    def written_bytes(self) -> int:
        """Characters of value text buffered by `write` so far (a bound on what the
        commit holds in memory; a cell written twice counts twice)."""
        return self._written_bytes

    def patch(
        self, cell_id: str, set: Mapping[str, Any] | None = None, delete: Iterable[str] = ()
    ) -> None:
        """Set and delete fields of the object the cell holds at commit, keeping its
        other fields; the cell must exist and hold an object."""
        plan = self._open()
        fields = {str(k): values.dumps(v) for k, v in (set or {}).items()}
        removed = {str(k) for k in delete} - fields.keys()
        op = plan.ops.get(cell_id)
        if isinstance(op, Delete):
            raise PreconditionFailed("store-precondition-failed",
                f"cannot patch fields of a cell this transaction deleted: {cell_id}"
            )
        if isinstance(op, Write):
            patched = apply_patch(cell_id, value_decoding.loads(op.text), Patch(fields, removed))
            plan.ops[cell_id] = Write(values.dumps(patched), op.labels)
        elif isinstance(op, Patch):
            op.delete = (op.delete - fields.keys()) | removed
            for key in removed:
                op.set.pop(key, None)
            op.set.update(fields)
        else:
            plan.ops[cell_id] = Patch(fields, removed)

    def delete(self, cell_id: str) -> None:
        """Remove the cell's value; its labels stay, so only its writers may recreate it."""
        self._open().ops[cell_id] = Delete()

    def expect_new_cells(self) -> None:
        """A hint, not a check: the caller expects none of the cells it writes to exist
        (a first sync's graph batch). A backend may then insert without reading their
        rows first; where one does exist, the commit is the same as without the hint."""
        self._open().expect_new = True

    def require_absent(self, cell_id: str) -> None:
        """Fail the commit when the cell holds a value."""
        self._open().require_absent.add(cell_id)

    def require_value_hash(self, cell_id: str, expected: bytes | str) -> None:
        """Fail the commit unless the cell's value has this value hash (raw 32 bytes,
        or the `sha256:<hex>` content-hash form)."""
        if isinstance(expected, str):
            if not expected.startswith("sha256:"):
                raise ValueError("a content hash starts with 'sha256:'")
            expected = bytes.fromhex(expected[len("sha256:") :])
        self._open().require_hash[cell_id] = expected

    def commit(self) -> int:
        """Apply every buffered write atomically and return the space's new sequence
        number (or its unchanged head when nothing was written)."""
        plan = self._open()
        self._closed = True
        if plan.streamed and not self._store.streams_writes():  # buffered like `write`'s
            for cells, labels in plan.streamed:
                for cell_id, text in cells:
                    plan.ops[cell_id] = Write(text, labels)
            plan.streamed = []
        return self._store._commit(plan)


class Store(abc.ABC):
    """A backend holding spaces of cells. Safe to share between threads."""

    def read(self, space: str, cell_id: str) -> Document | None:
        return self._read_row(space, cell_id)[1]

    def read_text(self, space: str, cell_id: str) -> tuple[int, Iterator[str]] | None:
        """(version, fvj1 text in pieces) of a live cell, or None: for a reader that scans a
        large value's text as it comes (ordering.read_ordering). This default decodes it
        and writes it again (values.dumps: the text as written), one piece."""
        document = self.read(space, cell_id)
        return None if document is None else (document.seq, iter((values.dumps(document.value),)))

    def read_many(self, space: str, cell_ids: Iterable[str]) -> dict[str, Document]:
        """Documents of the cells that exist, by ID (for many small cells)."""
        return dict(self.iter_many(space, cell_ids))

    @abc.abstractmethod
    def iter_many(
        self, space: str, cell_ids: Iterable[str], *, keep_fields: frozenset[str] = frozenset()
    ) -> Iterator[tuple[str, Document]]:
        """(id, document) for each cell that exists, decoded one at a time, in no
        particular order; not a snapshot: each batch of IDs is read on its own. A field
        of a value's top-level object named in `keep_fields` is left as its fvj1 JSON
        (value_decoding.decode_keeping: the prior index rows' previews)."""

    def read_texts(self, space: str, cell_ids: Iterable[str]) -> dict[str, str]:
        """The fvj1 text of each cell that holds a value, by ID, for comparing many cells
        with texts (held_cells.py). This default decodes and writes each value again."""
        return {cell_id: values.dumps(document.value) for cell_id, document in self.iter_many(space, cell_ids)}

    def existing(self, space: str, cell_ids: Iterable[str], *, roots: bool = False) -> set[str]:
        """Which of the cells hold a value (not absent, not deleted). Backends may answer
        without decoding any value; this default reads them. `roots`: the cells are
        graph roots, each written (with its graph, graph_batch.py) only after this
        found it absent, so a store writing a first sync without its key index
        answers from the roots it wrote (sqlite_key_index.py)."""
        return {cell_id for cell_id, _document in self.iter_many(space, cell_ids)}

    def finish_fresh_rows(self, space: str) -> None:
        """After a run's last graph batch, before anything links its cells: a store that
        wrote them without its key index builds it now (sqlite_key_index.py). This
        default does nothing."""
        return None

    def writes_alone(self, space: str) -> bool:
        """Whether this handle is, until `finish_fresh_rows`, the only writer of a store
        that was empty when its run began: a cell it did not write has no row. False
        (this default) when it cannot tell."""
        return False

    def transaction(self, space: str, writer: str) -> Transaction:
        return Transaction(self, space, writer)

    def stored_forms(self, space: str, texts: list[str]) -> list[str | bytes] | None:
        """What this backend keeps on disk for each fvj1 text of a cell in `space`, made
        ahead of a commit and passed to `Transaction.write(stored=)`; callable from any
        thread. None (this default) when the backend keeps the text as it is."""
        return None

    def stored_form_of_links(self, space: str, head: str, bodies: Any, tail: str, count: int | None = None) -> Any:
        """What this backend keeps (for `Transaction.write_stored`) for the fvj1 text `head`,
        links into `space` at no path to `of:fid1:` + each 43-byte ID body of `bodies` (or
        runs of `count` in all), comma-joined, `tail`, the text never made. None: none."""
        return None

    def stored_form_of_pieces(self, space: str, pieces: Iterable[bytes]) -> tuple[str | bytes, int] | None:
        """(what this backend keeps, the text's length) of the fvj1 text whose UTF-8 is
        `pieces` joined, made a piece at a time; None (this default): make the text."""
        return None

    def streams_writes(self) -> bool:
        """Whether `_commit` reads a plan's streamed writes (`Transaction.write_streamed`) a
        batch at a time itself; False (this default): the transaction buffers them first."""
        return False

    def batch_commits_release_gil(self) -> bool:
        """Whether a graph batch's commit does its bulk without the GIL: `stored_forms`,
        then a transaction of new cells (`expect_new_cells`) written. A second thread then
        commits the batches beside the caller's Python work (graph_batch.py)."""
        return False

    @abc.abstractmethod
    def head(self, space: str) -> int:
        """The space's last sequence number (0 before its first write)."""

    @abc.abstractmethod
    def changes_since(self, space: str, seq: int) -> list[tuple[str, int]]:
        """(cell id, seq) of every cell last written or deleted after seq, in seq
        order then ID order. A cell written several times appears once, at its
        latest seq; a deleted cell appears and reads as None."""

    def wait_for_change(
        self, space: str, seen: int, timeout: float, wake: threading.Event
    ) -> None:
        """Wait between two reads of the change feed: return once the space's head may
        have moved past `seen`, `wake` is set, or `timeout` seconds have passed (the
        caller reads the feed either way). This default polls: it waits on `wake` for
        `timeout`. A store that pushes its commits (PostgreSQL's LISTEN/NOTIFY) returns
        as soon as one lands and may wait longer than `timeout` while pushes arrive."""
        wake.wait(timeout)

    @abc.abstractmethod
    def store_id(self) -> str:
        """This store's identity: the same for every handle on it however its URL is
        spelled, different for every other store (a sequence belongs to its store)."""

    @abc.abstractmethod
    def next_sequence(self, space: str, name: str) -> int:
        """The next value (1, 2, ...) of a named counter, allocated atomically across
        threads and processes; never repeats."""

    def sequences(self, space: str) -> dict[str, int]:
        """Every named counter of the space with the last value it gave (for copying a
        space to another store, store_copy.py)."""
        raise StoreError("store-unsupported", f"{type(self).__name__} cannot list its sequences")

    def advance_sequence(self, space: str, name: str, value: int) -> None:
        """Make the named counter's last value at least `value`, so it never gives a
        number up to `value` again (for copying a space). This default allocates
        numbers until it gets there; backends set the counter at once."""
        while self.next_sequence(space, name) < value:
            pass

    @abc.abstractmethod
    def lock(
        self, space: str, name: str, *, timeout: float = DEFAULT_TIMEOUT_SECONDS,
        on_wait: OnWait | None = None,
    ) -> StoreLock:
        """A named lock for the space, taken by every handle on this store however it
        was opened (store_lock.StoreLock: reentrant per object, exclusive between
        objects and processes, LockHeld naming the holder after `timeout` seconds).
        Creating it changes nothing; the first acquire makes what the lock needs."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @abc.abstractmethod
    def _read_row(self, space: str, cell_id: str) -> tuple[int, Document | None]:
        """(version, document) of a cell: version 0 when never written, document
        None when absent or deleted."""

    def _read_version(self, space: str, cell_id: str) -> int:
        """The version of a cell (see `_read_row`); backends may skip decoding its value."""
        return self._read_row(space, cell_id)[0]

    @abc.abstractmethod
    def _commit(self, plan: CommitPlan) -> int:
        """Under a lock no other commit on the space can interleave with, pass the
        current rows to resolve_commit, write its result with the next seq, and
        return that seq; change nothing when it raises.

        A plan without ops writes nothing: check it against one consistent read of
        the current rows, without taking the write lock, and return the head."""


def open_store(url: str, *, notice: Callable[[str], None] | None = None) -> Store:
    """A store from its URL (store_url.py): `sqlite:///abs/path.db` or
    `sqlite:///:memory:`; a relative path must be resolved first (`resolve_store_url`).
    `postgresql://` (or `postgres://`) URLs open a PostgreSQL store (postgres_store.py).
    `notice` hears what was done to make the store's files private."""
    from lib.fabric.store_url import MEMORY, check_store_url, is_postgres_url, sqlite_path

    check_store_url(url)
    if is_postgres_url(url):
        from lib.fabric.postgres_store import PostgresStore

        return PostgresStore(url)
    path = sqlite_path(url)
    from lib.fabric.sqlite_store import SQLiteStore

    if path == MEMORY:
        return SQLiteStore(MEMORY)
    if not path.startswith("/"):
        raise StoreUrlError(
            "store-url-relative",
            f"the store URL {url} names a relative path; resolve it first (agentctl resolves "
            f"it against the working directory) or write it absolute, like sqlite:///home/me/fabric.db",
        )
    return SQLiteStore(path, notice=notice)

"""Copying a space from one store to another (SQLite to PostgreSQL, or back), resumable
and verified: `agentctl store copy FROM TO`.

What is copied: every live cell of the space (its value and labels), cells deleted in
the source are deleted in the destination, and every named sequence is advanced in
the destination to at least the source's value (so an observation number is never
given twice). Document sequence numbers are the destination's own: each store numbers
its commits, and nothing stored in a value refers to them.

Resumable: cells are copied in batches, each batch one commit per writer, and a cell
the destination already holds with the same value hash and labels is skipped. An
interrupted copy run again copies only what is missing or changed.

Verified: after copying, every live cell of the source is read back from the
destination and compared by value hash and labels, and the destination's live cells
are counted; a difference is a `CopyMismatch` naming the first cells that differ.

The copy holds the publish and receipts locks of the space in both stores, so no
publication or receipt interleaves with it (stop hosts and executors on the source
first: a command appended meanwhile is not copied). The destination's integrity check
is a check of names: the copy writes each cell as the first writer its labels allow,
as whoever owns the space would.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

from lib.errors import ExitCode, NotFoundError, UsageError
from lib.fabric.store import Document, Store, open_store
from lib.fabric.store_errors import StoreError
from lib.fabric.store_lock import DEFAULT_TIMEOUT_SECONDS, PUBLISH_LOCK, RECEIPTS_LOCK, OnWait
from lib.fabric.store_url import display_store_url, is_memory_url, resolve_store_url, sqlite_path
from lib.hashing import value_hash

BATCH = 200  # cells per batch: bounds memory by 2 x BATCH decoded values


class CopyMismatch(StoreError):
    """The destination does not hold what the source holds after the copy (exit 1)."""

    exit_code = ExitCode.FAILURE


class SameStore(StoreError):
    """FROM and TO are one store: nothing to copy (exit 2)."""

    exit_code = ExitCode.USAGE


@dataclass
class CopyReport:
    space: str
    cells: int = 0  # live cells in the source
    copied: int = 0  # written this run
    unchanged: int = 0  # already in the destination (a resumed or repeated copy)
    deleted: int = 0  # deleted in the destination, as in the source
    sequences: dict[str, int] = field(default_factory=dict)
    verified: bool = False

    def to_record(self) -> dict:
        return {"record": "store-copy", **asdict(self)}


def open_copy_store(url: str, base: str | os.PathLike[str], *, source: bool) -> Store:
    """The store a copy reads (source) or writes: a relative `sqlite:` path resolved
    against `base`; a source SQLite file must exist (opening would create it)."""
    if not url:
        raise UsageError("bad-store-url", "a store URL is empty; give one, like sqlite:///home/me/fabric.db")
    url = resolve_store_url(url, base)
    if is_memory_url(url):
        raise UsageError("store-in-memory", f"{url} is an in-memory store: name a file or a server")
    path = sqlite_path(url)
    if source and path is not None and not os.path.exists(path):
        raise NotFoundError("store-not-found", f"no store at {display_store_url(url)}: nothing to copy")
    return open_store(url)


def copy_space(
    source: Store,
    destination: Store,
    space: str,
    *,
    lock_timeout: float = DEFAULT_TIMEOUT_SECONDS,
    on_lock_wait: OnWait | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CopyReport:
    """Copy `space` from source to destination, then verify it (see the module)."""
    if source.store_id() == destination.store_id():
        raise SameStore("store-copy-same-store", "FROM and TO are the same store; name two stores")
    report = CopyReport(space)
    with contextlib.ExitStack() as held:
        for store in (source, destination):
            for name in (PUBLISH_LOCK, RECEIPTS_LOCK):
                held.enter_context(store.lock(space, name, timeout=lock_timeout, on_wait=on_lock_wait))
        ids = [cell for cell, _seq in source.changes_since(space, 0)]
        for done, (cell_ids, have, there) in enumerate(_batches(source, destination, space, ids)):
            _copy_batch(destination, space, cell_ids, have, there, report)
            if progress is not None:
                progress(min((done + 1) * BATCH, len(ids)), len(ids))
        for name, value in sorted(source.sequences(space).items()):
            destination.advance_sequence(space, name, value)
            report.sequences[name] = value
        verify_copy(source, destination, space, report)
    return report


def _batches(
    source: Store, destination: Store, space: str, ids: list[str]
) -> Iterator[tuple[list[str], dict[str, Document], dict[str, Document]]]:
    for start in range(0, len(ids), BATCH):
        cell_ids = ids[start : start + BATCH]
        yield cell_ids, dict(source.iter_many(space, cell_ids)), dict(destination.iter_many(space, cell_ids))


def _same(a: Document, b: Document) -> bool:
    return a.labels == b.labels and value_hash(a.value) == value_hash(b.value)


def _copy_batch(
    destination: Store,
    space: str,
    cell_ids: list[str],
    have: dict[str, Document],
    there: dict[str, Document],
    report: CopyReport,
) -> None:
    by_writer: dict[str, list[tuple[str, Document | None]]] = {}
    for cell in cell_ids:
        document, existing = have.get(cell), there.get(cell)
        if document is None:
            if existing is not None:  # deleted in the source
                by_writer.setdefault(_writer(existing, space), []).append((cell, None))
                report.deleted += 1
            continue
        report.cells += 1
        if existing is not None and _same(document, existing):
            report.unchanged += 1
            continue
        # the destination lets a cell be changed by a writer its current labels name
        writer = _writer(existing or document, space)
        by_writer.setdefault(writer, []).append((cell, document))
        report.copied += 1
    for writer, writes in by_writer.items():
        with destination.transaction(space, writer) as tx:
            for cell, document in writes:
                if document is None:
                    tx.delete(cell)
                else:
                    tx.write(cell, document.value, document.labels)
            tx.commit()


def _writer(document: Document, space: str) -> str:
    return document.labels.integrity[0] if document.labels.integrity else space


def verify_copy(source: Store, destination: Store, space: str, report: CopyReport) -> None:
    """CopyMismatch unless every live source cell is in the destination with the same
    value hash and labels, the destination has no other live cell, and every sequence
    is at least the source's. Sets `report.verified`."""
    ids = [cell for cell, _seq in source.changes_since(space, 0)]
    differ: list[str] = []
    count = 0
    for cell_ids, have, there in _batches(source, destination, space, ids):
        for cell in cell_ids:
            document, copied = have.get(cell), there.get(cell)
            if document is None and copied is None:
                continue
            count += document is not None
            if document is None or copied is None or not _same(document, copied):
                differ.append(cell)
    live = sum(1 for _ in _live(destination, space))
    sequences = destination.sequences(space)
    behind = [n for n, v in source.sequences(space).items() if sequences.get(n, 0) < v]
    if differ or live != count or behind:
        detail = []
        if differ:
            detail.append(f"{len(differ)} cells differ (first: {', '.join(differ[:3])})")
        if live != count:
            detail.append(f"the destination holds {live} live cells, the source {count}")
        if behind:
            detail.append(f"sequences behind the source: {', '.join(sorted(behind))}")
        raise CopyMismatch(
            "store-copy-mismatch",
            f"the copy of space {space} does not match its source: {'; '.join(detail)}; "
            f"run the copy again (it resumes), or look at what else writes to the destination",
        )
    report.verified = True


def _live(store: Store, space: str) -> Iterator[str]:
    ids = [cell for cell, _seq in store.changes_since(space, 0)]
    for start in range(0, len(ids), BATCH):
        for cell, _document in store.iter_many(space, ids[start : start + BATCH]):
            yield cell

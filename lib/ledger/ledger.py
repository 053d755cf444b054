"""`CommandLedger`: the local command ledger (interfaces §Local command ledger).

The file is JSON: `{"schema": LEDGER_SCHEMA, "generation": n, "receipts": {id:
receipt}, "pendingPublicationCommandIds": [id, ...]}`, receipts sorted by command id,
each receipt's `result` an `fvj1:` string. Two slots hold it, the configured path
and `<path>.previous`: every commit durably replaces the inactive slot (files.py),
so the newest valid generation is never overwritten. `open()` validates both slots,
takes the valid one with the highest generation (an invalid slot beside a valid one
is ignored; equal generations must hold equal states), commits the empty generation
0 when there is none, and repairs a missing or invalid slot with a copy of the
current one before it returns. Writes are serialized by a thread lock, processes by
the ledger's file lock (`<path>.lock`); a failed write changes nothing in memory.

A marker can be cleared without a write of its own (`mark_published(id, defer=True)`,
the worker's path): it is clear in memory at once (`pending()`, the count) and reaches
the disk with the next write, or at `close()`. A crash before then leaves the marker
on disk, so recovery publishes that receipt again: the same terminal receipt, which
never runs its command again (docs/command-path.md, "Session 20").
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lib.group_commit import GroupCommit
from lib.ledger import files
from lib.ledger.files import LedgerError
from lib.ledger.receipts import InvalidReceipt, from_stored, stored_receipt, to_stored
from lib.ledger.render import ReceiptPieces, render_whole
from lib.ledger.settled import SettledOrder, TrackedReceipts
from lib.receipts import CommandReceipt

log = logging.getLogger(__name__)

LEDGER_SCHEMA = "commonfabric.agent-connector.command-ledger"
MAX_SAFE_INTEGER = 2**53 - 1
# Settled receipts (terminal and published) kept; older ones are dropped, oldest
# completion first. The file is rewritten whole on every write, so it must not grow
# with every command ever run; a command redelivered after its receipt left the ledger
# is still never run again: the worker finds its receipt in the store first.
MAX_SETTLED = 256
_FIELDS = {"schema", "generation", "receipts", "pendingPublicationCommandIds"}


Receipts = dict[str, dict[str, Any]]
# A change edits the batch's working copy in place and says whether it changed anything.
Change = Callable[[Receipts, list[str]], bool]


class _State:
    __slots__ = ("generation", "receipts", "pending")

    def __init__(self, generation: int, receipts: dict[str, dict[str, Any]], pending: list[str]) -> None:
        self.generation = generation
        self.receipts = receipts  # command id -> stored receipt (result as fvj1 string)
        self.pending = pending

    def same_as(self, other: _State) -> bool:
        return (self.generation, self.receipts, self.pending) == (other.generation, other.receipts, other.pending)

    def render(self) -> bytes:
        # orjson: a ledger of thousands of receipts renders in a millisecond (json.dumps
        # takes 20 times as long, on every write). Stored receipts are plain JSON.
        return render_whole(LEDGER_SCHEMA, self.generation, self.receipts, self.pending)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("duplicate key")
    return obj


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_ledger(data: bytes, where: str) -> _State:
    """The state a slot's bytes hold; LedgerError `invalid-ledger` naming what is wrong."""

    def bad(why: str) -> LedgerError:
        return LedgerError("invalid-ledger", f"command ledger {where} {why}; move it away to start an empty ledger")

    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise bad(f"is not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != LEDGER_SCHEMA:
        raise bad(f"is not a current command ledger (schema is not {LEDGER_SCHEMA!r})")
    if set(doc) != _FIELDS:
        raise bad(f"does not have exactly the fields {', '.join(sorted(_FIELDS))}")
    generation = doc["generation"]
    if type(generation) is not int or not 0 <= generation <= MAX_SAFE_INTEGER:
        raise bad("generation is not a non-negative safe integer")
    if not isinstance(doc["receipts"], dict):
        raise bad("receipts is not an object")
    receipts: dict[str, dict[str, Any]] = {}
    for key, stored in doc["receipts"].items():
        if not isinstance(stored, dict) or stored.get("commandId") != key:
            raise bad(f"receipt key {key!r} does not equal its receipt's commandId")
        try:
            from_stored(stored, f"receipt {key!r}")
        except InvalidReceipt as exc:
            raise bad(f"has an invalid {exc.message}") from None
        receipts[key] = stored
    pending = doc["pendingPublicationCommandIds"]
    if not isinstance(pending, list) or not all(isinstance(cid, str) for cid in pending):
        raise bad("pendingPublicationCommandIds is not an array of strings")
    if len(set(pending)) != len(pending):
        raise bad("pendingPublicationCommandIds repeats a command id")
    missing = [cid for cid in pending if cid not in receipts]
    if missing:
        raise bad(f"pendingPublicationCommandIds names {missing[0]!r}, which has no receipt")
    return _State(generation, receipts, list(pending))


def _clear_markers(command_ids: dict[str, int]) -> Change:
    def clear(receipts: Receipts, pending: list[str]) -> bool:
        kept = [cid for cid in pending if cid not in command_ids]
        if len(kept) == len(pending):
            return False
        pending[:] = kept
        return True

    return clear


def _nothing(receipts: Receipts, pending: list[str]) -> bool:
    return False  # a write for the deferred clears alone


class CommandLedger:
    """Receipts kept on disk, with the set awaiting publication. Thread-safe."""

    def __init__(self, path: Path, lock_fd: int, state: _State, active: Path) -> None:
        self.path = path
        self.previous_path = path.with_name(path.name + ".previous")
        self._lock_fd: int | None = lock_fd
        self._state = state  # what is on disk
        self._active = active
        self._mutex = threading.Lock()  # guards the state and the lock descriptor
        # Changes that arrive while a write is on its way to disk go in the next one
        # (one fsync for many threads); close waits for a write on its way.
        self._group = GroupCommit(self._write_batch)
        self._writing = threading.Lock()
        # Markers cleared in memory, not yet on disk (command id -> the clear's number:
        # a clear made again while a write carries the first one stays for the next).
        self._cleared: dict[str, int] = {}
        self._clears = 0
        self._pieces = ReceiptPieces()  # each receipt's rendered entry, reused by the next write
        self._settled = SettledOrder()  # the settled receipts by completion, for the cap

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> CommandLedger:
        """Open (creating) the ledger at `path`; its generation is on disk in both slots
        when this returns. CodedError when a slot is unsafe or no slot is valid."""
        path = Path(os.path.abspath(path))
        previous = path.with_name(path.name + ".previous")
        files.ensure_directory(path.parent)
        lock_fd = files.lock(path)
        try:
            files.remove_stale_temporaries(path)
            files.remove_stale_temporaries(previous)
            valid: list[tuple[Path, _State]] = []
            errors: list[LedgerError] = []
            for slot in (path, previous):
                data = files.read_slot(slot)
                if data is None:
                    continue
                try:
                    valid.append((slot, parse_ledger(data, str(slot))))
                except LedgerError as exc:
                    errors.append(exc)
            if not valid and errors:
                raise errors[0]
            if not valid:
                state = _State(0, {}, [])
                files.write_durably(path, state.render())
                valid.append((path, state))
            if len(valid) == 2 and valid[0][1].generation == valid[1][1].generation:
                if not valid[0][1].same_as(valid[1][1]):
                    raise LedgerError(
                        "ledger-slots-disagree",
                        f"command ledger {path} and {previous.name} hold different states with the same "
                        f"generation {valid[0][1].generation}; keep the right one and move the other away",
                    )
            active, state = max(valid, key=lambda pair: pair[1].generation)
            if len(valid) == 1:  # repair: the inactive slot gets a copy of the current one
                files.write_durably(previous if active == path else path, state.render())
            return cls(path, lock_fd, state, active)
        except BaseException:
            os.close(lock_fd)
            raise

    def close(self) -> None:
        """Write the markers cleared since the last write (a failure only leaves them
        set on disk: recovery publishes those receipts again), then release the file."""
        if self._lock_fd is not None and self._cleared:
            try:
                self._group.submit(_nothing)
            except LedgerError as exc:
                log.warning("command ledger %s: cleared markers not written at close: %s", self.path, exc.message)
        with self._writing, self._mutex:
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    def flush(self) -> None:
        """Write the markers cleared since the last write now (nothing when there are none)."""
        with self._mutex:
            self._open_state()
            if not self._cleared:
                return
        self._group.submit(_nothing)

    def __enter__(self) -> CommandLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open_state(self) -> _State:
        if self._lock_fd is None:
            raise LedgerError("ledger-closed", f"command ledger {self.path} is closed")
        return self._state

    def _change(self, change: Change) -> None:
        """Apply `change` and make it durable before returning. Changes from threads that
        arrive while a write is on its way go to disk together in the next one; a failed
        write fails its changes (memory keeps what is on disk) and not the next ones."""
        with self._mutex:
            self._open_state()
        self._group.submit(change)

    def _write_batch(self, changes: list[Change]) -> None:
        with self._writing:
            with self._mutex:
                base = self._open_state()  # closed meanwhile: the batch fails with ledger-closed
                cleared = dict(self._cleared)  # made before these changes: applied first
            written = self._write(base, [_clear_markers(cleared), *changes])
            with self._mutex:
                if written is not None:
                    self._state, self._active = written
                for cid, number in cleared.items():
                    if self._cleared.get(cid) == number:
                        del self._cleared[cid]

    def _write(self, base: _State, changes: list[Change]) -> tuple[_State, Path] | None:
        """The next generation with `changes` applied, written to the inactive slot
        (None when they change nothing)."""
        # One working copy for the whole batch (base stays what is on disk if the write
        # fails); it notes the receipts the changes touch, so the settled order and the
        # file's entries are brought up to date at those alone (settled.py, render.py).
        receipts, pending, changed = TrackedReceipts(base.receipts), list(base.pending), False
        for change in changes:
            changed = change(receipts, pending) or changed
        if not changed:
            return None
        if base.generation >= MAX_SAFE_INTEGER:
            raise LedgerError("ledger-write-failed", f"command ledger {self.path} generation is exhausted")
        # Settled receipts (terminal and published) beyond MAX_SETTLED leave, oldest
        # completion first; one awaiting publication or still in flight always stays.
        self._settled.drop_beyond(MAX_SETTLED, base.receipts, receipts, pending)
        state = _State(base.generation + 1, receipts, pending)
        target = self.previous_path if self._active == self.path else self.path
        data = self._pieces.render(
            LEDGER_SCHEMA, state.generation, receipts, pending, base=base.receipts, touched=receipts.touched
        )
        try:
            files.write_durably(target, data)
        except BaseException:
            self._settled.forget()  # memory keeps `base`: the next write rebuilds both
            self._pieces.forget()
            raise
        return state, target

    @property
    def generation(self) -> int:
        with self._mutex:
            return self._open_state().generation

    def get(self, command_id: str) -> dict[str, Any] | None:
        """A copy of the receipt stored for `command_id`, None when there is none."""
        with self._mutex:
            stored = self._open_state().receipts.get(command_id)
        return None if stored is None else from_stored(stored, f"receipt {command_id!r}")

    def put(self, receipt: dict[str, Any] | CommandReceipt, *, published: bool = False) -> None:
        """Store `receipt` (validated, copied) and mark it pending publication; with
        `published`, store it as published already (one write: no marker to clear)."""
        stored = stored_receipt(receipt) if isinstance(receipt, CommandReceipt) else to_stored(receipt)
        cid = stored["commandId"]

        def store(receipts: Receipts, pending: list[str]) -> bool:
            receipts[cid] = stored
            if cid in pending:
                pending.remove(cid)
            if not published:
                pending.append(cid)
            return True

        self._change(store)

    def mark_published(self, command_id: str, *, defer: bool = False) -> None:
        """Clear the pending-publication marker of `command_id` (nothing when it has none).
        With `defer`, it is clear in memory now and written with the next write (or at
        close), not by a write of its own."""
        if defer:
            with self._mutex:
                if command_id in self._open_state().pending:
                    self._clears += 1  # a new number: a write already carrying an older one keeps this
                    self._cleared[command_id] = self._clears
            return
        self._change(_clear_markers({command_id: 0}))

    def pending_publication_count(self) -> int:
        """How many receipts await publication (never their contents)."""
        with self._mutex:
            state = self._open_state()
            return len(state.pending) - sum(1 for cid in self._cleared if cid in state.pending)

    def pending(self) -> list[dict[str, Any]]:
        """Copies of the receipts awaiting publication, oldest marker first (for recovery)."""
        with self._mutex:
            state = self._open_state()
            stored = [state.receipts[cid] for cid in state.pending if cid not in self._cleared]
        return [from_stored(s, f"receipt {s['commandId']!r}") for s in stored]

    def receipts(self) -> list[dict[str, Any]]:
        """Copies of every stored receipt, by command id (recovery finds `in-flight` ones here)."""
        with self._mutex:
            state = self._open_state()
            stored = [state.receipts[cid] for cid in sorted(state.receipts)]
        return [from_stored(s, f"receipt {s['commandId']!r}") for s in stored]

"""A Codex listing asked ahead: each `thread/list` page is asked for as soon as the one
before it is answered, not when the collection takes that one, within a byte budget.

Session 22 asked one page ahead (lib/reconcile.py's `SourceStream`): page N+1 is asked
when page N is taken. While the collection does something else for a while (opening the
publication reads every prior index row: 0.4 to 1 s at 3,000 threads), Codex made one
page and then waited. Here a thread of the driver's own follows the cursors: when a page
is answered it asks for the next one at once, so Codex keeps listing while our main
thread works, until the answers held (answered, not yet taken) reach `BUDGET` bytes as
Codex sent them (a page of 100 threads is about 0.1 MB).

What the collection sees does not change: `begin` gives the page asked ahead for that
cursor, or asks for it then (a cursor the chain has not reached, a chain that stopped);
an answer's failure is raised when its page is taken, where it was raised before; a
failure to ask only ends the chain (the collection then asks itself, and sees it). At
most one chain runs; a page asked by the collection itself starts a new one after it.
A chain ends at the last page, at a cursor it asked before, on any failure, and when the
driver stops or starts again. Pages never taken (a listing limit, a cancelled run) are
dropped with the run.

A listing may begin with pages answered before the driver had the child (the idle fast
path's early listing, codex_early_list.py): `preload` holds them as pages asked ahead,
and the chain follows the last of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from lib.drivers.jsonrpc_messages import parse_message

BUDGET = 1 << 20  # answer bytes held ahead (about ten pages) before the chain waits
_NOTHING = object()


class AskedPage:
    """One `thread/list` request: its pending call and what the driver captured with it."""

    __slots__ = ("cursor", "pending", "context", "size")

    def __init__(self, cursor: str | None, pending: Any, context: Any) -> None:
        self.cursor = cursor
        self.pending = pending  # a PendingCall
        self.context = context  # the driver's own (archived flag, owned threads)
        self.size = 0  # the answer's bytes, once answered


class HeldBytes:
    """A page's answer held ahead as its bytes as received (the early listing's pages, a
    page the chain holds), parsed again when taken (issue 14 goal 4: parsed, the up to
    `BUDGET` bytes held while the collection reads the prior index were about five times
    as many bytes of small objects, 5.5 MB traced at 25,000 threads, made by another
    thread among the prior's own)."""

    __slots__ = ("raw", "size")

    def __init__(self, raw: bytes, size: int) -> None:
        self.raw, self.size = raw, size

    def result_sized(self, signal: Any = None) -> tuple[Any, int]:
        message = parse_message(self.raw)  # as the transport parsed it: the same answer
        return (message or {}).get("result"), self.size


def early_pages(pages: list[Any], page_size: int) -> list[AskedPage]:
    """The early listing's pages (codex_early_list.EarlyPage) as the Codex driver's pages
    asked ahead (its context: archived or not, no thread of its own running, as none
    was), up to the first not asked as a driver of `page_size` asks."""
    from lib.drivers.codex_list_params import list_params

    asked = []
    for page in pages:
        if list_params(page.cursor, page_size)[1] != page.params:
            break
        asked.append(AskedPage(page.cursor, HeldBytes(page.raw, page.size), (page.params["archived"], set())))
    return asked


class ListAhead:
    """The chain of one driver's listing (see the module's docstring)."""

    def __init__(self, ask: Callable[[str | None], AskedPage],
                 follows: Callable[[AskedPage, Any], str | None], *, budget: int = BUDGET) -> None:
        self._ask = ask
        self._follows = follows
        self.budget = budget
        self._cond = threading.Condition()
        self._asked: dict[str | None, AskedPage] = {}  # asked ahead, not taken
        self._seen: set[str | None] = set()  # every cursor asked in this run (a repeat ends the chain)
        self._holding: set[AskedPage] = set()  # answered, not taken: their sizes make `_held`
        self._held = 0
        self._chain = 0  # the running chain's number; a chain with another number ends
        self._asking: str | None | object = _NOTHING  # the cursor the chain is sending now
        self.asked_ahead = 0  # pages the chain asked (for tests and the bench)
        self.most_held = 0  # the most answered pages held at once (for tests)

    def begin(self, cursor: str | None) -> AskedPage:
        """The page at `cursor`: the one asked ahead, or asked now (then a new chain
        follows it). The first page (cursor None) not asked ahead begins a new listing:
        nothing asked ahead for an earlier one is given. Raises what asking raises."""
        with self._cond:
            while cursor == self._asking:
                self._cond.wait()  # the chain is sending it: take that one
            page = self._asked.pop(cursor, None)
            if page is None:
                if cursor is None:
                    self._clear()
                self._chain += 1  # the running chain (if any) stops where it is
                chain = self._chain
                self._seen.add(cursor)
                self._cond.notify_all()
        if page is not None:
            return page
        page = self._ask(cursor)  # outside the lock: a write to the child may wait
        self._follow(page, chain)
        return page

    def preload(self, pages: list[AskedPage]) -> None:
        """Begin a listing with `pages` answered already, in order from its first page;
        the chain follows the last one."""
        if not pages:
            return
        with self._cond:
            self._clear()
            self._chain += 1
            chain = self._chain
            for page in pages:
                self._asked[page.cursor] = page
                self._seen.add(page.cursor)
            for page in pages[:-1]:  # the last is counted by the chain that follows it
                page.size = page.pending.size
                self._holding.add(page)
                self._held += page.size
            self.asked_ahead += len(pages)
        self._follow(pages[-1], chain)

    def start(self) -> None:
        """Begin a listing's chain at its first page before the collection asks for
        anything (the collection's `begin(None)` then takes that page); nothing when
        the listing began with pages answered already (`preload`)."""
        with self._cond:
            if None in self._asked:
                return
            self._clear()
            self._chain += 1
            chain = self._chain
            self._seen.add(None)
            self._asking = None
        try:
            page = self._ask(None)
        except Exception:  # noqa: BLE001 -- the collection asks itself and sees it
            page = None
        with self._cond:
            self._asking = _NOTHING
            self._cond.notify_all()
            if page is None or chain != self._chain:
                return  # the collection asked meanwhile: it asked for the page itself
            self._asked[None] = page
            self.asked_ahead += 1
        self._follow(page, chain)

    def taken(self, page: AskedPage) -> None:
        """The collection took `page`: its answer no longer counts against the budget."""
        with self._cond:
            if page in self._holding:
                self._holding.discard(page)
                self._held -= page.size
                self._cond.notify_all()

    def reset(self) -> None:
        """The run ended (the driver stopped or starts again): every chain ends."""
        with self._cond:
            self._clear()
            self._chain += 1
            self._cond.notify_all()

    def _clear(self) -> None:
        self._asked.clear()
        self._seen.clear()
        self._holding.clear()
        self._held = 0

    # -- the chain's thread ---------------------------------------------------------------

    def _follow(self, page: AskedPage, chain: int) -> None:
        threading.Thread(target=self._run, args=(page, chain), daemon=True, name="list-ahead").start()

    def _run(self, page: AskedPage, chain: int) -> None:
        while True:
            try:
                result, size = page.pending.result_sized()
            except Exception:  # noqa: BLE001 -- raised again where the page is taken
                return
            with self._cond:
                if chain != self._chain:
                    return
                following = self._follows(page, result)
                if self._asked.get(page.cursor) is page:  # not taken yet: it counts until it is
                    page.size = size
                    self._holding.add(page)
                    self._held += size
                    self.most_held = max(self.most_held, len(self._holding))
                    raw = page.pending.answer_bytes() if hasattr(page.pending, "answer_bytes") else None
                    if raw is not None:  # held as its bytes: the parsed answer goes with its call
                        page.pending = HeldBytes(raw, size)
                del result
                if following is None or following in self._seen:
                    return  # the last page, or a repeated cursor: the collection stops there
                while self._held >= self.budget and chain == self._chain:
                    self._cond.wait()
                if chain != self._chain:
                    return
                self._seen.add(following)
                self._asking = following
            try:
                page = self._ask(following)
            except Exception:  # noqa: BLE001 -- the collection asks itself and sees it
                with self._cond:
                    self._seen.discard(following)
                    self._asking = _NOTHING
                    self._cond.notify_all()
                return
            with self._cond:
                self._asking = _NOTHING
                self._cond.notify_all()
                if chain != self._chain:
                    return
                self._asked[following] = page
                self.asked_ahead += 1

"""The ACP driver's private event loop: the asyncio SDK runs on a thread of its own, and
the driver's public methods stay blocking (DESIGN "Threads, locks and queues").

`LoopThread.run(coroutine)` runs one coroutine on that loop and waits for it. There is no
elapsed-time limit (spec: calls stay pending until the agent answers, the host aborts
start-up or the agent exits); a wait ends with its coroutine, when a `CancelSignal` given
to it is set, or when `close()` ends every wait still open, which is how a driver's
`stop()` frees callers that an agent never answers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from lib.drivers.base import CancelSignal

_T = TypeVar("_T")
SIGNAL_POLL_SECONDS = 0.1  # how often a wait with a CancelSignal looks at it


class LoopClosed(Exception):
    """The loop was closed (the driver stopped) before the coroutine finished."""


class LoopThread:
    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_forever, name=name, daemon=True)
        self._lock = threading.Lock()
        self._waits: set[concurrent.futures.Future[Any]] = set()
        self._closed = False
        self._thread.start()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def _run_forever(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def submit(self, coroutine: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        """Start `coroutine` on the loop; its future is cancelled by `close()`."""
        with self._lock:
            if self._closed:
                coroutine.close()
                raise LoopClosed()
            future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
            self._waits.add(future)
        future.add_done_callback(self._forget)
        return future

    def run(self, coroutine: Coroutine[Any, Any, _T], signal: CancelSignal | None = None) -> _T:
        """Run `coroutine` on the loop and wait for its result. LoopClosed when the loop
        closed first; the signal's `Cancelled` when it was set first."""
        return self.wait(self.submit(coroutine), signal)

    def wait(self, future: concurrent.futures.Future[_T], signal: CancelSignal | None = None) -> _T:
        try:
            if signal is None:
                return future.result()
            while True:
                signal.raise_if_cancelled()
                try:
                    return future.result(timeout=SIGNAL_POLL_SECONDS)
                except concurrent.futures.TimeoutError:
                    continue
        except concurrent.futures.CancelledError:
            raise LoopClosed() from None
        finally:
            if signal is not None and signal.cancelled:
                future.cancel()

    def call_soon(self, callback: Any, *args: Any) -> None:
        """Run a plain callback on the loop (no wait)."""
        self._loop.call_soon_threadsafe(callback, *args)

    def _forget(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._waits.discard(future)

    def close(self, final: Coroutine[Any, Any, Any] | None = None) -> None:
        """End every open wait, run `final` (the connection's and process's end) on the
        loop, then stop the loop and its thread. Idempotent."""
        with self._lock:
            if self._closed:
                if final is not None:
                    final.close()
                return
            self._closed = True
            waits = list(self._waits)
        for future in waits:
            future.cancel()
        if final is not None:
            try:
                asyncio.run_coroutine_threadsafe(final, self._loop).result()
            except Exception:  # noqa: BLE001 - the end must go on to stop the loop
                pass
        # Every task left (handlers, readers) ends here, so none is destroyed pending.
        asyncio.run_coroutine_threadsafe(_cancel_remaining(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        if threading.current_thread() is not self._thread:
            self._thread.join()
            self._loop.close()


async def _cancel_remaining() -> None:
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

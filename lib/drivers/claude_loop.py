"""The Claude driver's private asyncio event loop, on a thread of its own.

The SDK is async; every driver method is blocking. The driver owns one loop, started by
`start()` and stopped by `stop()`: blocking methods hand coroutines to it with `submit()`
and wait on the returned `concurrent.futures.Future`. No callback of the command worker
ever runs on this loop (milestones are called on the caller's thread).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from lib.drivers.base import DriverError

_T = TypeVar("_T")


class ClaudeLoop:
    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._lock:
            if self._loop is not None:
                return
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=self._run, args=(loop,), name=self._name, daemon=True)
            self._loop, self._thread = loop, thread
        thread.start()

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()

    @property
    def running(self) -> bool:
        with self._lock:
            return self._loop is not None and not self._loop.is_closed()

    def submit(self, coroutine: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        """Run `coroutine` on the loop; its future. `driver-stopped` when the loop is gone."""
        with self._lock:
            loop = self._loop
            if loop is None or self._thread is None or loop.is_closed():
                coroutine.close()
                raise DriverError("driver-stopped", f"{self._name} is not running")
            return asyncio.run_coroutine_threadsafe(coroutine, loop)

    def wait(self, future: concurrent.futures.Future[_T]) -> _T:
        """`future.result()`, without an elapsed-time limit but not past the loop's end: a
        future the stopped loop will never finish is cancelled (CancelledError)."""
        while True:
            try:
                return future.result(timeout=0.5)
            except concurrent.futures.TimeoutError:
                if not self.running:
                    future.cancel()

    def call_soon(self, callback: Any, *args: Any) -> None:
        """`callback(*args)` on the loop thread (nothing when the loop is gone)."""
        with self._lock:
            loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(callback, *args)
            except RuntimeError:  # closed between the check and the call
                pass

    def stop(self, grace_seconds: float) -> None:
        """Cancel what still runs, give it `grace_seconds` to finish (the SDK terminates its
        CLI children while it unwinds), then stop the loop and join its thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._thread = None
        if loop is None or thread is None:
            return

        async def finish() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=grace_seconds)

        try:
            asyncio.run_coroutine_threadsafe(finish(), loop).result(timeout=grace_seconds + 5)
        except (concurrent.futures.TimeoutError, RuntimeError, concurrent.futures.CancelledError):
            pass
        try:
            loop.call_soon_threadsafe(loop.stop)
        except RuntimeError:
            pass
        thread.join(timeout=grace_seconds + 5)

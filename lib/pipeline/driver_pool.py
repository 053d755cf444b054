"""Started drivers by source id, shared by the stages of one run and kept by its owner.

The pool belongs to whoever runs the stages (a command, `sync`, a host), not to a
stage: stages only borrow drivers, so a host can keep its drivers between cycles and
closes the pool when it stops.
"""

from __future__ import annotations

from collections.abc import Callable

from lib.drivers.base import AgentDriver, DriverError


class DriverPool:
    """A source whose driver cannot be created or started is remembered as its error, so
    every session of that source reports the same reason without retrying the start."""

    def __init__(self, factory: Callable[[str], AgentDriver]) -> None:
        self._factory = factory
        self._drivers: dict[str, AgentDriver | DriverError] = {}
        self._stopped = False

    def get(self, source_id: str) -> AgentDriver | DriverError:
        if source_id not in self._drivers:
            if self._stopped:
                return DriverError("driver-stopped", f"source {source_id}: its provider was stopped")
            try:
                driver = self._factory(source_id)
                driver.start()
                self._drivers[source_id] = driver
            except DriverError as exc:
                self._drivers[source_id] = exc
        return self._drivers[source_id]

    def require(self, source_id: str) -> AgentDriver:
        """The started driver of `source_id`; its start failure raised as a DriverError."""
        driver = self.get(source_id)
        if isinstance(driver, DriverError):
            raise driver
        return driver

    def stop_all(self) -> None:
        """Stop every started driver now, which ends the waits of their calls in flight,
        and start no other: the pool's calls fail from here on (a host's stop that can
        wait no longer for a provider that does not answer)."""
        if not self._stopped:
            self._stopped = True
            for driver in list(self._drivers.values()):
                if isinstance(driver, AgentDriver):
                    driver.stop()

    def close(self) -> None:
        if not self._stopped:
            for driver in self._drivers.values():
                if isinstance(driver, AgentDriver):
                    driver.stop()
        self._stopped = True
        self._drivers.clear()

    def __enter__(self) -> DriverPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

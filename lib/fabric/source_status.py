"""One source's part of a publication: its observation sequence, its errors, and the
source row the indexes carry for it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lib.fabric.source_rows import source_row


@dataclass
class SourceState:
    descriptor: dict[str, Any]  # SourceDescriptor wire form
    sequence: int
    errors: list[dict[str, Any]] = field(default_factory=list)
    unbacked: bool = False  # a retained session had no complete published copy
    suspect: bool = False  # its inventory would delete too much (publication_resolve.DeletionGuard)
    read: int = 0
    retained: int = 0
    ended: bool = False

    @property
    def source_id(self) -> str:
        return self.descriptor["id"]

    @property
    def capabilities(self) -> dict[str, Any]:
        return dict(self.descriptor.get("capabilities") or {})

    def record_error(self, error: Mapping[str, Any]) -> None:
        """Keep one entry per (code, session, message): the stream's outcome repeats
        read errors that add_error already recorded."""
        marker = (error.get("code"), error.get("nativeSessionId"), error.get("message"))
        for known in self.errors:
            if (known.get("code"), known.get("nativeSessionId"), known.get("message")) == marker:
                return
        self.errors.append(dict(error))

    def inventory_complete(self, outcome: Mapping[str, Any]) -> bool:
        """Complete only when enumeration completed, no retention went unbacked and the
        inventory is not suspect."""
        return bool(outcome.get("inventoryComplete")) and not self.unbacked and not self.suspect

    def verdict_row(self, outcome: Mapping[str, Any], observed_at: str) -> dict[str, Any]:
        """The source row of a collection with an inventory outcome."""
        inventory_complete = self.inventory_complete(outcome)
        listed = outcome.get("listedSessionIds") or []
        return source_row(
            self.descriptor,
            inventory_complete=inventory_complete,
            complete=bool(outcome.get("complete")) and inventory_complete and not self.errors,
            observed_at=observed_at,
            listed=len(listed) or int(outcome.get("listed") or 0),
            read=int(outcome.get("read") or self.read),
            retained=int(outcome.get("retained") or self.retained),
            errors=self.errors,
        )

    def targeted_row(self, prior: Mapping[str, Any] | None, observed_at: str) -> dict[str, Any]:
        """The source row after a targeted refresh: no inventory verdict, so the prior
        row stays, with the driver's current descriptor."""
        if prior is None:
            return source_row(
                self.descriptor,
                inventory_complete=False,
                complete=False,
                observed_at=observed_at,
                listed=0,
                read=self.read,
                retained=self.retained,
                errors=self.errors,
            )
        row = dict(prior)
        row.update(
            driver=self.descriptor.get("driver"),
            providerVersion=self.descriptor.get("providerVersion"),
            capabilities=self.capabilities,
        )
        return row

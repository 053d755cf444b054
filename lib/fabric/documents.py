"""What a store holds for a cell: its document (value, labels, the sequence number of
its last write) and the labels that say who may read and write it (store.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Labels:
    """Who may read a cell (confidentiality: owner DIDs) and write it (integrity: writer DIDs)."""

    confidentiality: tuple[str, ...] = ()
    integrity: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "confidentiality", tuple(self.confidentiality))
        object.__setattr__(self, "integrity", tuple(self.integrity))

    def to_json(self) -> str:
        return json.dumps(
            {"confidentiality": list(self.confidentiality), "integrity": list(self.integrity)},
            separators=(",", ":"),
        )

    @staticmethod
    def from_json(text: str) -> Labels:
        data = json.loads(text)
        return Labels(tuple(data["confidentiality"]), tuple(data["integrity"]))

    @staticmethod
    def owned_by(did: str) -> Labels:
        """A cell that did owns and alone may write: what a write without labels creates."""
        return Labels((did,), (did,))


@dataclass(frozen=True, slots=True)
class Document:
    value: Any
    labels: Labels
    seq: int

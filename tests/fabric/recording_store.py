"""A real SQLite store that records what the graph layer asks of it (no faults faked)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from lib.fabric.commit_rules import CommitPlan
from lib.fabric.documents import Document
from lib.fabric.sqlite_store import SQLiteStore


class RecordingStore(SQLiteStore):
    """Records every read_many batch and commit plan; `before_commit` runs once, inside
    the next commit before it takes the write lock (to stage a concurrent writer)."""

    def __init__(self, path: Any) -> None:
        super().__init__(path)
        self.read_batches: list[list[str]] = []
        self.plans: list[CommitPlan] = []
        self.before_commit: Callable[[], None] | None = None

    def read_many(self, space: str, cell_ids: Iterable[str]) -> dict[str, Document]:
        ids = list(cell_ids)
        self.read_batches.append(ids)
        return super().read_many(space, ids)

    def ids_read(self) -> list[str]:
        return [cell for batch in self.read_batches for cell in batch]

    def _commit(self, plan: CommitPlan) -> int:
        self.plans.append(plan)
        hook, self.before_commit = self.before_commit, None
        if hook is not None:
            hook()
        return super()._commit(plan)

"""What `agentctl sync` shows on a terminal, from its records: errors on stderr, a line
per source and a total on stdout. Plain code (no click, no lib), so the idle fast path
(cli/fast_sync.py) shows its kept records exactly as the normal path's SyncSummary does."""

from __future__ import annotations

import sys
from typing import Any

KINDS = frozenset({"outcome", "error", "publication"})  # the records it reads; the rest pass by


class SummaryLines:
    def __init__(self) -> None:
        self._unchanged: set[str] = set()

    def emit(self, kind: str, record: dict[str, Any]) -> None:
        if kind == "outcome" and record.get("inventoryUnchanged"):
            self._unchanged.add(record.get("sourceId"))
        elif kind == "error":
            print(f"error: {record.get('sourceId') or '-'} {record.get('nativeSessionId') or ''}: "
                  f"{record['message']}", file=sys.stderr)
        elif kind == "publication":
            self._show(record)

    def _show(self, record: dict) -> None:
        for source in record["sources"]:
            if source["sourceId"] in self._unchanged:
                print(f"{source['sourceId']}: home unchanged since the last complete sync, not listed "
                      f"({source.get('listed', 0)} sessions kept)")
                continue
            state = "complete" if source.get("inventoryComplete") else "incomplete"
            print(f"{source['sourceId']}: {source.get('listed', 0)} listed, {source.get('read', 0)} read, "
                  f"{source.get('retained', 0)} kept unchanged, {source.get('errorCount', 0)} errors "
                  f"(inventory {state})")
        statuses = ", ".join(f"{n} {s}" for s, n in record["statuses"].items()) or "none"
        if record.get("idle"):
            print(f"nothing published: every source unchanged; the store stays at generation "
                  f"{record['generation']}: {record['sessionCount']} sessions ({statuses})")
            return
        print(f"published generation {record['generation']}: {record['sessionCount']} sessions "
              f"({record['written']} written, {record['unchanged']} unchanged; {statuses})")

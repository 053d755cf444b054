"""Receipts and slot helpers for the ledger tests."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def receipt(cid: str = "cmd-1", **extra: Any) -> dict[str, Any]:
    value = {
        "schema": "commonfabric.agent-connector.command-receipt",
        "commandId": cid,
        "sourceId": "codex",
        "nativeSessionId": "session-1",
        "status": "succeeded",
        "claimedAt": "2026-01-02T03:04:05.678Z",
        "completedAt": "2026-01-02T03:04:06.000Z",
    }
    value.update(extra)
    return value


def read_json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def write_json(path: Path, doc: Any) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(doc) if not isinstance(doc, str) else doc)

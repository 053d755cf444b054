"""Builds a ScriptedDriver from a JSON script, so CLI subprocess tests can use the fake.

Format (camelCase, every key optional):
  {"source": {"id", "driver"}, "capabilities": {...}, "sessions": [snapshot...],
   "pageSize": n, "pages": [{"cursor": null|str, "sessions": [id | summary], "nextCursor"}],
   "listFaults": [{"cursor", "code", "message"}], "readFaults": [{"nativeSessionId", ...}],
   "prompts": [{"nativeSessionId", "reply", "result", "failBeforeReady", "raises"}],
   "results": [{"operation", "nativeSessionId", "result"}]}
A file may also hold {"sources": {sourceId: script}} for several sources.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lib.drivers.base import DriverError
from lib.types import (
    AgentSourceConfig,
    CommandExecutionResult,
    DriverCapabilities,
    NativeSessionSnapshot,
    SessionPage,
    SessionSummary,
    normalize_source_id,
)
from tests.support.scripted_driver import PromptScript, ScriptedDriver


def driver_from_dict(
    data: dict[str, Any], config: AgentSourceConfig | None = None
) -> ScriptedDriver:
    """Build from the JSON form (camelCase) that CLI subprocess tests write to a file."""
    source = data.get("source", {})
    config = config or AgentSourceConfig(
        id=source.get("id", "scripted"), driver=source.get("driver", "codex-app-server")
    )
    snapshots = [NativeSessionSnapshot.model_validate(s) for s in data.get("sessions", [])]
    by_id = {s.summary.native_session_id: s.summary for s in snapshots}
    pages = None
    if "pages" in data:
        pages = {
            page.get("cursor"): SessionPage(
                sessions=[_summary(entry, by_id) for entry in page.get("sessions", [])],
                next_cursor=page.get("nextCursor"),
            )
            for page in data["pages"]
        }
    capabilities = data.get("capabilities")
    return ScriptedDriver(
        config,
        snapshots=snapshots,
        pages=pages,
        page_size=data.get("pageSize"),
        capabilities=DriverCapabilities.model_validate(capabilities) if capabilities else None,
        list_faults={f.get("cursor"): _fault(f) for f in data.get("listFaults", [])},
        read_faults={f["nativeSessionId"]: _fault(f) for f in data.get("readFaults", [])},
        prompts={p["nativeSessionId"]: _prompt_script(p) for p in data.get("prompts", [])},
        results={
            (r["operation"], r["nativeSessionId"]): CommandExecutionResult.model_validate(
                r["result"]
            )
            for r in data.get("results", [])
        },
    )


def load_scripted_driver(path: str | Path, config: AgentSourceConfig) -> ScriptedDriver:
    """The driver for `config` from a script file: one script, or {"sources": {id: script}}."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if "sources" in data:
        data = data["sources"][normalize_source_id(config.id)]
    return driver_from_dict(data, config)


def _summary(entry: str | dict[str, Any], by_id: dict[str, SessionSummary]) -> SessionSummary:
    if isinstance(entry, str):  # an id lists the session with its snapshot's summary
        return by_id[entry].model_copy(deep=True)
    return SessionSummary.model_validate(entry)


def _fault(data: dict[str, Any]) -> DriverError:
    return DriverError(data.get("code", "scripted-fault"), data.get("message", "scripted fault"))


def _prompt_script(data: dict[str, Any]) -> PromptScript:
    result = data.get("result")
    return PromptScript(
        reply=data.get("reply", "ok"),
        result=CommandExecutionResult.model_validate(result) if result else None,
        raises=_fault(data["raises"]) if data.get("raises") else None,
        fail_before_ready=bool(data.get("failBeforeReady", False)),
    )

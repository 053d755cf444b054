"""Started ACP drivers over the project's test agent, stopped when the test ends."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lib.drivers.acp import AcpDriver
from lib.types import AgentSourceConfig
from tests.support.acp_agents import agent_argv

GUARD_SECONDS = 60  # far above anything here: reaching it means the call hung


class AgentWorld:
    """One test agent home and the drivers started over it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "agent-home"
        self.home.mkdir()
        self.drivers: list[AcpDriver] = []

    def config(self, *args: str, source_id: str = "acp", cwd: Path | None = None,
               env: dict[str, str] | None = None) -> AgentSourceConfig:
        return AgentSourceConfig(id=source_id, driver="acp", command=agent_argv(self.home, *args),
                                 cwd=str(cwd) if cwd else None, env=env or {})

    def driver(self, *args: str, start: bool = True, **kwargs: Any) -> AcpDriver:
        driver = AcpDriver(self.config(*args, **kwargs))
        self.drivers.append(driver)
        if start:
            driver.start()
        return driver

    def loads(self) -> list[str]:
        path = self.home / "loads.log"
        return path.read_text().splitlines() if path.exists() else []

    def requests(self) -> list[dict[str, Any]]:
        path = self.home / "requests.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def initialize(self) -> dict[str, Any]:
        return json.loads((self.home / "initialize.json").read_text())

    def stop_all(self) -> None:
        for driver in self.drivers:
            driver.stop()


def agent_world(tmp_path: Path) -> Iterator[AgentWorld]:
    """The body of each test module's `agents` fixture."""
    world = AgentWorld(tmp_path)
    try:
        yield world
    finally:
        world.stop_all()


def outcome_of(target: Callable[..., Any], *args: Any, guard: float = GUARD_SECONDS, **kwargs: Any) -> dict[str, Any]:
    """Run `target` on a thread: its value or error, and `hung` if it never returned."""
    outcome: dict[str, Any] = {}

    def body() -> None:
        try:
            outcome["value"] = target(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            outcome["error"] = exc

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(guard)
    outcome["hung"] = thread.is_alive()
    return outcome


def in_background(target: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """Start `target` on a thread; join the thread, then read the dict."""
    outcome: dict[str, Any] = {}

    def body() -> None:
        try:
            outcome["value"] = target(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            outcome["error"] = exc

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, outcome

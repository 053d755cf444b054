"""Desktop starts: hand a new session to the Claude app, and pair the session it makes.

A desktop start runs no prompt here. It snapshots the ids of every session the SDK
lists (all projects), records its creation-time boundary (now, in ms), and opens
`claude://code/new?q=<prompt>&folder=<directory>` through an opener (injectable; the
default asks the desktop: `open` on macOS, `xdg-open` elsewhere). The person sends the
prompt in the app, which mints a session id of its own. A later listing or read pairs a
session with the start when it was absent from the snapshot, has a finite creation time
at or after the boundary, names the same directory and opens with the start's prompt
(compared the way the SDK reports `first_prompt`: newlines as spaces, trimmed, at most
200 characters then `…`). Its summary then carries the caller's id as `startedAs`; one
start pairs one session, the first the inventory shows. Pending starts and pairings are
kept in this driver's memory; the pairing lasts in the store once published (the index
row's `startedAs`).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from lib.drivers.base import DriverError

NEW_CODE_SESSION = "claude://code/new"
FIRST_PROMPT_LIMIT = 200  # the SDK's first_prompt shortening

Opener = Callable[[str], None]


def desktop_link(directory: str, prompt: str) -> str:
    """The app's new-Code-session link with the prompt and the folder, URL-encoded."""
    return f"{NEW_CODE_SESSION}?q={quote(prompt, safe='')}&folder={quote(directory, safe='')}"


def open_with_desktop(link: str) -> None:
    """The default opener: the platform's own URL handler; DriverError when it fails."""
    program = "open" if sys.platform == "darwin" else "xdg-open"
    try:
        done = subprocess.run([program, link], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=False)
    except OSError as exc:
        raise DriverError("opener-failed", f"cannot run {program} to open the Claude app: {exc.strerror}") from None
    if done.returncode != 0:
        raise DriverError("opener-failed", f"{program} could not open the Claude app link (exit {done.returncode})")


def first_prompt_form(text: str) -> str:
    """`text` as the SDK reports a session's first prompt."""
    result = text.replace("\n", " ").strip()
    if len(result) > FIRST_PROMPT_LIMIT:
        result = result[:FIRST_PROMPT_LIMIT].rstrip() + "\u2026"
    return result


def same_directory(a: str | None, b: str | None) -> bool:
    return bool(a) and bool(b) and os.path.realpath(a) == os.path.realpath(b)  # type: ignore[arg-type]


@dataclass(frozen=True)
class DesktopStart:
    caller_id: str
    directory: str
    prompt: str
    boundary_ms: float
    snapshot: frozenset[str]

    def matches(self, info: Any) -> bool:
        created = getattr(info, "created_at", None)
        return (
            info.session_id not in self.snapshot
            and isinstance(created, int | float) and not isinstance(created, bool) and math.isfinite(created)
            and created >= self.boundary_ms
            and same_directory(getattr(info, "cwd", None), self.directory)
            and getattr(info, "first_prompt", None) == first_prompt_form(self.prompt)
        )


class DesktopStarts:
    """The desktop starts of one driver and the sessions paired with them."""

    def __init__(self, opener: Opener) -> None:
        self._opener = opener
        self._lock = threading.Lock()
        self._pending: list[DesktopStart] = []
        self._paired: dict[str, str] = {}  # the app's session id -> the caller's id

    def start(self, caller_id: str, directory: str, prompt: str, inventory: Callable[[], Iterable[str]],
              clock: Callable[[], float] = time.time) -> dict[str, Any]:
        """Snapshot, boundary, open the link; the command's result. Raises DriverError when
        the inventory or the opener fails (nothing is kept then)."""
        boundary_ms = clock() * 1000
        snapshot = frozenset(inventory())
        start = DesktopStart(caller_id, directory, prompt, boundary_ms, snapshot)
        with self._lock:
            self._pending.append(start)
        try:
            self._opener(desktop_link(directory, prompt))
        except BaseException:
            with self._lock:
                self._pending.remove(start)
            raise
        return {"affectedSession": None, "nativeSessionId": caller_id, "cwd": directory, "desktop": True}

    def started_as(self, info: Any) -> str | None:
        """The caller's id when `info` is (or now becomes) the session a desktop start made."""
        session = str(info.session_id)
        with self._lock:
            if session in self._paired:
                return self._paired[session]
            for start in self._pending:
                if start.matches(info):
                    self._pending.remove(start)
                    self._paired[session] = start.caller_id
                    return start.caller_id
        return None

    def pending(self) -> list[DesktopStart]:
        with self._lock:
            return list(self._pending)

"""What an ACP agent lets a client change in each session, learned from its answers.

Modes and configuration options are per session in ACP. They are learned from the
responses that carry them (`session/new`, `session/load`, `session/resume`): a later
response replaces what was known of that session, so a mode or option it no longer
names is gone. A successful `session/set_config_option` response replaces that session's
option descriptors. A completed inventory forgets sessions it no longer lists.

Published (the source's capabilities): `modes` is the sorted union of every known
session's mode ids; `configOptions` is an object of option descriptors by option id (the
SDK's wire form). Where sessions describe one option id differently, the session whose id
sorts first gives the descriptor, so the published value does not depend on read order.

Checks: a mode must be one the target session advertises; an option must be one it
advertises, a boolean option takes a boolean, and a select option takes only one of its
values, values nested in option groups included.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Controls:
    modes: list[str] = field(default_factory=list)
    current_mode: str | None = None
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # by option id


class Refusal(Exception):
    """A mode or option value the session does not accept: `status` and `code` of the
    command result, and why."""

    def __init__(self, status: str, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class SessionControls:
    """Thread-safe: learned on the loop thread, read by callers and publication."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, Controls] = {}

    def learn(self, session_id: str, response: Any) -> None:
        """Replace the session's controls with what a new/load/resume response carries."""
        modes = getattr(response, "modes", None)
        controls = Controls(
            modes=[m.id for m in modes.available_modes] if modes is not None else [],
            current_mode=modes.current_mode_id if modes is not None else None,
            options=_descriptors(getattr(response, "config_options", None)),
        )
        with self._lock:
            self._sessions[session_id] = controls

    def replace_options(self, session_id: str, config_options: Any) -> None:
        with self._lock:
            controls = self._sessions.setdefault(session_id, Controls())
            controls.options = _descriptors(config_options)

    def mode_set(self, session_id: str, mode: str) -> None:
        with self._lock:
            if session_id in self._sessions:
                self._sessions[session_id].current_mode = mode

    def forget_unlisted(self, listed: set[str], keep: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        """After a complete inventory: keep only the sessions it listed (and `keep`)."""
        with self._lock:
            for session_id in list(self._sessions):
                if session_id not in listed and session_id not in keep:
                    del self._sessions[session_id]

    def known(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._sessions

    def get(self, session_id: str) -> Controls | None:
        with self._lock:
            controls = self._sessions.get(session_id)
            return Controls(list(controls.modes), controls.current_mode, dict(controls.options)) if controls else None

    def published(self) -> tuple[list[str], dict[str, Any]]:
        """(sorted union of mode ids, descriptors by option id)."""
        with self._lock:
            modes = sorted({mode for controls in self._sessions.values() for mode in controls.modes})
            options: dict[str, Any] = {}
            for session_id in sorted(self._sessions):
                for option_id, descriptor in self._sessions[session_id].options.items():
                    options.setdefault(option_id, descriptor)
        return modes, options

    # -- checks ------------------------------------------------------------------------

    def check_mode(self, session_id: str, mode: str) -> None:
        controls = self.get(session_id)
        if controls is None or not controls.modes:
            raise Refusal("unsupported", "unsupported", f"session {session_id} advertises no modes")
        if mode not in controls.modes:
            raise Refusal("unsupported", "unknown-mode",
                          f"session {session_id} has no mode {mode!r}; it advertises "
                          f"{', '.join(controls.modes)}")

    def check_option(self, session_id: str, key: str, value: Any) -> None:
        controls = self.get(session_id)
        descriptor = controls.options.get(key) if controls is not None else None
        if descriptor is None:
            names = ", ".join(sorted(controls.options)) if controls and controls.options else "none"
            raise Refusal("unsupported", "unknown-option",
                          f"session {session_id} has no configuration option {key!r} (it has: {names})")
        kind = descriptor.get("type")
        if kind == "boolean":
            if not isinstance(value, bool):
                raise Refusal("failed", "invalid-option-value",
                              f"option {key!r} of session {session_id} takes true or false")
            return
        if kind == "select":
            allowed = select_values(descriptor)
            if not isinstance(value, str) or value not in allowed:
                raise Refusal("failed", "invalid-option-value",
                              f"option {key!r} of session {session_id} takes one of {', '.join(allowed)}")
            return
        raise Refusal("unsupported", "unknown-option-type",
                      f"option {key!r} of session {session_id} is of a type agentctl does not know")


def select_values(descriptor: dict[str, Any]) -> list[str]:
    """Every value of a select option, those nested in groups included."""
    values: list[str] = []
    for item in descriptor.get("options") or []:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("value"), str):
            values.append(item["value"])
        for nested in item.get("options") or []:
            if isinstance(nested, dict) and isinstance(nested.get("value"), str):
                values.append(nested["value"])
    return values


def _descriptors(config_options: Any) -> dict[str, dict[str, Any]]:
    descriptors: dict[str, dict[str, Any]] = {}
    for option in config_options or []:
        wire = option.model_dump(mode="json", by_alias=True, exclude_none=True)
        if isinstance(wire.get("id"), str):
            descriptors[wire["id"]] = wire
    return descriptors

"""What an ACP agent lets a client change in each session, learned from its answers.

Modes and configuration options are per session in ACP. They are learned from the
responses that carry them (`session/new`, `session/load`, `session/resume`): a later
response replaces what was known of that session, so a mode or option it no longer
names is gone. A successful `session/set_config_option` response replaces that session's
option descriptors. A completed inventory forgets sessions it no longer lists.

Kept between runs (`acp_controls_book`), once the driver hands a book to `keep_in`:
what the book holds joins what is known, every change is written through (only when it
changes what the book holds), and a forgotten session's file is removed. A complete
inventory also adopts, from the book, listed sessions this process knows nothing of
(learned by another process since this one started); what this process learned wins.

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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lib.drivers.acp_controls_book import ControlsBook


@dataclass
class Controls:
    modes: list[str] = field(default_factory=list)
    current_mode: str | None = None
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # by option id

    def to_wire(self) -> dict[str, Any]:
        return {"modes": list(self.modes), "currentMode": self.current_mode, "options": dict(self.options)}

    @classmethod
    def from_wire(cls, value: dict[str, Any]) -> Controls | None:
        """From a kept file; None when it is not in that form."""
        modes, current, options = value.get("modes"), value.get("currentMode"), value.get("options")
        if (not isinstance(modes, list) or not all(isinstance(mode, str) for mode in modes)
                or not (current is None or isinstance(current, str)) or not isinstance(options, dict)
                or not all(isinstance(d, dict) and d.get("id") == k for k, d in options.items())):
            return None
        return cls(modes=list(modes), current_mode=current, options=dict(options))


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
        self._book: ControlsBook | None = None
        self._written = threading.Lock()  # one write to the book at a time, the newest last
        self._kept: dict[str, dict[str, Any]] = {}  # what the book holds, by session

    # -- kept between runs ---------------------------------------------------------------

    def keep_in(self, book: ControlsBook) -> None:
        """Keep the controls in `book` from now on; what it holds joins what is known."""
        stored = book.load_all()
        with self._lock:
            self._book = book
            for session_id, wire in stored.items():
                controls = Controls.from_wire(wire)
                if controls is None:
                    continue
                self._kept[session_id] = controls.to_wire()
                self._sessions.setdefault(session_id, controls)

    def close(self) -> None:
        with self._written:
            book, self._book = self._book, None
        if book is not None:
            book.close()

    def _write(self, session_id: str) -> None:
        """The session's controls as known now into the book (removed when forgotten);
        a write that fails leaves them in memory only, and the next change tries again."""
        with self._written:
            book = self._book
            if book is None:
                return
            with self._lock:
                controls = self._sessions.get(session_id)
                wire = controls.to_wire() if controls is not None else None
                if self._kept.get(session_id) == wire:
                    return
            try:
                if wire is None:
                    book.forget(session_id)
                else:
                    book.save(session_id, wire)
            except OSError:
                return
            with self._lock:
                if wire is None:
                    self._kept.pop(session_id, None)
                else:
                    self._kept[session_id] = wire

    def _adopt(self, session_ids: set[str]) -> None:
        """Listed sessions this process knows nothing of, from the book (another process
        may have learned them since this one started)."""
        book = self._book
        if book is None:
            return
        with self._lock:
            unknown = sorted(session_ids - self._sessions.keys())
        for session_id in unknown:
            wire = book.load(session_id)
            controls = Controls.from_wire(wire) if wire is not None else None
            if controls is not None:
                with self._lock:
                    if session_id not in self._sessions:
                        self._sessions[session_id] = controls
                        self._kept[session_id] = controls.to_wire()

    # -- learned -------------------------------------------------------------------------

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
        self._write(session_id)

    def replace_options(self, session_id: str, config_options: Any) -> None:
        with self._lock:
            controls = self._sessions.setdefault(session_id, Controls())
            controls.options = _descriptors(config_options)
        self._write(session_id)

    def mode_set(self, session_id: str, mode: str) -> None:
        with self._lock:
            if session_id in self._sessions:
                self._sessions[session_id].current_mode = mode
        self._write(session_id)

    def forget_unlisted(self, listed: set[str], keep: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        """After a complete inventory: keep only the sessions it listed (and `keep`), and
        adopt the book's controls of listed sessions not known here."""
        with self._lock:
            forgotten = [sid for sid in self._sessions if sid not in listed and sid not in keep]
            for session_id in forgotten:
                del self._sessions[session_id]
        for session_id in forgotten:
            self._write(session_id)
        self._adopt(listed)

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

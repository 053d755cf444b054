"""The one shape every agentctl error takes: a stable `code` for programs and records,
and a `message` for people (never an exception class name stored as data)."""

from __future__ import annotations


class CodedError(Exception):
    """An error with a stable `code` and a human `message`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

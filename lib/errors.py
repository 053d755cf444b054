"""The one shape every agentctl error takes, and the one exit-code table.

Every error a user can cause is a `CodedError`: a stable `code` for programs and
records, a `message` for people (never an exception class name stored as data), and
the `exit_code` a command ends with when the error stops it. The command line prints
the message as one line and exits with that code; nothing else maps errors to codes.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What every `agentctl` command exits with (documented in the README)."""

    OK = 0
    FAILURE = 1  # the work failed (a provider, the store, a busy store)
    USAGE = 2  # bad options, bad configuration, bad input
    PARTIAL = 3  # some sessions or sources failed, the rest went through
    LOCKED = 4  # a lock is held by another process
    NOT_FOUND = 5  # what was asked for does not exist
    NEEDS_CONFIRMATION = 6  # a command's receipt: the provider wants a person to confirm
    UNKNOWN_OUTCOME = 7  # a command's receipt: whether it ran cannot be known; do not repeat it blindly
    TERMINATED = 143  # SIGTERM (128 + 15, as a shell reports it), after an orderly stop


class CodedError(Exception):
    """An error with a stable `code`, a human `message` and the exit code it ends with.

    Subclasses set `exit_code` when their failure is not a plain FAILURE.
    """

    exit_code: ExitCode = ExitCode.FAILURE

    def __init__(self, code: str, message: str, *, exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code

    def reworded(self, message: str) -> CodedError:
        """The same error (class, code, exit code) with another message, e.g. with the
        context a caller adds; the exit code still comes from the error, not the caller."""
        other = self.__class__.__new__(self.__class__)
        other.__dict__.update(self.__dict__)
        other.args = (message,)
        other.message = message
        return other


class UsageError(CodedError):
    """Options, arguments, configuration or input the user must change."""

    exit_code = ExitCode.USAGE


class NotFoundError(CodedError):
    """What was asked for does not exist."""

    exit_code = ExitCode.NOT_FOUND

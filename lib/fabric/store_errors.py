"""The store contract's errors: every one a `CodedError` (stable code, message, exit code)."""

from __future__ import annotations

from lib.errors import CodedError, ExitCode


class StoreError(CodedError):
    """A store failure: `code` is stable, `message` is for people."""


class StoreUrlError(StoreError):
    """A store URL this version cannot open: the user must change it."""

    exit_code = ExitCode.USAGE


class StoreBusy(StoreError):
    """Another writer kept the store's write lock past the busy timeout: try again."""


class ConflictError(StoreError):
    """A document this transaction read has moved on: nothing was written."""


class PreconditionFailed(StoreError):
    """A precondition of the commit (absent, value hash) failed: nothing was written."""


class WriteDenied(StoreError):
    """The writer is not among the cell's integrity labels: nothing was written."""

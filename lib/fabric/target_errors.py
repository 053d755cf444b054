"""TargetError: the one error a FabricTarget and its helper modules raise for a target
that cannot be used as asked (its own module so those helpers need not import target.py)."""

from __future__ import annotations

from lib.errors import CodedError


class TargetError(CodedError):
    """A target that cannot be used as asked. `code` is stable, `message` for people."""

"""One environment variable set for the length of one call, under a process-wide lock.

The Claude Agent SDK's session functions read `CLAUDE_CONFIG_DIR` from `os.environ` at
call time and take no environment argument, so the Claude adapter (claude_sdk_adapter.py)
sets the source's directory around each call and puts back what was there: the spec's
"short serialized environment change", for those synchronous calls only. One lock for the
whole process, because the environment is the process's: two sources' calls never
interleave their changes, and nothing else this process does reads the variable.

`VariableSwitch.call` runs once per read and per listing, so it does what `os.environ`'s
own methods do without their Python layers; `with_environment` is the plain path through
the mapping, for any variable and for an `os.environ` that is not CPython's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

# One lock for every switch in the process: the environment is process-wide.
ENVIRONMENT_LOCK = threading.Lock()

_T = TypeVar("_T")


def with_environment(name: str, value: str | None, function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """`function(*args, **kwargs)` with `os.environ[name] = value` (None: left as it is),
    under the process-wide lock; the previous value (or its absence) comes back afterwards.
    Plain code rather than a context manager: it runs once per read, and a generator-based
    context manager doubled its cost."""
    if value is None:
        return function(*args, **kwargs)
    environ = os.environ
    with ENVIRONMENT_LOCK:
        previous = environ.get(name)
        if previous == value:  # already so (the lock keeps it so): nothing to set or put back
            return function(*args, **kwargs)
        environ[name] = value
        try:
            return function(*args, **kwargs)
        finally:
            if previous is None:
                try:
                    del environ[name]  # `pop` looks it up first: twice the work
                except KeyError:
                    pass
            else:
                environ[name] = previous


class VariableSwitch:
    """`with_environment` for one variable and value, doing what `os.environ`'s own
    methods do (the C environment through `putenv`/`unsetenv`, and the mapping's encoded
    items) without their Python layers: `os.environ.get` of an absent variable raises and
    catches a KeyError inside, and the whole switch through the mapping cost four times
    this, once per read. Where `os.environ` is not CPython's `os._Environ` (no `_data`
    dict of encoded items), it goes through the mapping as above."""

    def __init__(self, name: str, value: str) -> None:
        self.name, self.value = name, value
        self._key, self._encoded = os.environ.encodekey(name), os.environ.encodevalue(value)

    def call(self, function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        data = getattr(os.environ, "_data", None)
        if type(data) is not dict:
            return with_environment(self.name, self.value, function, *args, **kwargs)
        key, value = self._key, self._encoded
        with ENVIRONMENT_LOCK:
            previous = data.get(key)
            if previous == value:  # already so (the lock keeps it so): nothing to set or put back
                return function(*args, **kwargs)
            os.putenv(key, value)
            data[key] = value
            try:
                return function(*args, **kwargs)
            finally:
                if previous is None:
                    os.unsetenv(key)
                    data.pop(key, None)
                else:
                    os.putenv(key, previous)
                    data[key] = previous

"""gc_paused(): the cyclic collector held off while a burst of short-lived containers is
made and dropped (capturing a session's events, planning its graphs).

Such a burst allocates many containers and creates no cycles, yet each allocation
threshold crossed starts a collection that traverses every young object, and now and
then every live one (the caller's parsed session, the modules, the models). Held off,
the containers are freed by reference counting as usual; what is still alive at the end
is collected at the next threshold, as before.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block (nested pauses leave it to the outer)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

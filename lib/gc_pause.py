"""gc_paused(): the cyclic collector held off while a burst of short-lived containers is
made and dropped (capturing a session's events, planning its graphs).

Such a burst allocates many containers and creates no cycles, yet each allocation
threshold crossed starts a collection that traverses every young object, and now and
then every live one (the caller's parsed session, the modules, the models). Held off,
the containers are freed by reference counting as usual; what is still alive at the end
is collected at the next threshold, as before.

The command line's start-up (cli/main.py) holds it off the same way while it imports
(`hold_for_start_up`, up to the command's module: `end_start_up`, cli/lazy_group.py).
Those imports make objects that live until the process ends (modules, classes,
pydantic's models, click's commands), which every collection walked again (about 75
collections before `sync`'s command ran); what was made by then is frozen (no
collection walks it again; reference counting frees it as before). However the run
ends, every object still alive is frozen too (`freeze_at_exit`): the interpreter's
teardown would walk them all with nothing left to collect (about 40 ms of CPU after a
listing idle sync). The fast paths (--version, --help) import too little to matter.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["end_start_up", "freeze_at_exit", "gc_paused", "hold_for_start_up"]

_start_up = {"held": False, "normal": False}


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


def hold_for_start_up() -> None:
    """The command line's normal path begins: no collection until `end_start_up`."""
    _start_up["normal"] = True
    if gc.isenabled():
        gc.disable()
        _start_up["held"] = True


def end_start_up() -> None:
    """Freeze what the start-up made and turn the collector back on; nothing unless
    `hold_for_start_up` held it (a command a test's CliRunner runs, say)."""
    if _start_up["held"]:
        _start_up["held"] = False
        gc.freeze()
        gc.enable()


def freeze_at_exit() -> None:
    """The command line's run ends: freeze every object still alive (nothing on the
    fast paths, which never held the collector)."""
    if _start_up["normal"]:
        end_start_up()  # a run that ended before its command was loaded
        gc.freeze()

"""What a command needs besides the library: the Workspace, and talking to people
(progress bars and messages on stderr, only when someone is there to see them)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # imported when a command first asks for it: `--help` never does
    from lib.workspace import Workspace

T = TypeVar("T")


@dataclass
class AppContext:
    """`settings` are the Workspace's arguments as the global options gave them; the
    Workspace is opened when a command first asks for it, after every option is in."""

    verbose: int = 0
    quiet: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    _workspace: Workspace | None = field(default=None, init=False, repr=False)

    @property
    def workspace(self) -> Workspace:
        if self._workspace is None:
            from lib.workspace import Workspace

            self._workspace = Workspace(**self.settings, notify=self.say)
        return self._workspace

    def close(self) -> None:
        if self._workspace is not None:
            self._workspace.close()

    def progress(self, iterable: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
        """A tqdm bar on stderr, only when stderr is a terminal and not --quiet."""
        if self.quiet or not sys.stderr.isatty():
            yield from iterable
            return
        from tqdm import tqdm

        with tqdm(iterable, desc=description, total=total, unit="session", file=sys.stderr, leave=False) as bar:
            yield from bar

    def say(self, message: str) -> None:
        if not self.quiet:
            print(message, file=sys.stderr)


def stdin_if_piped() -> IO[str] | None:
    """stdin when something is piped in; never block waiting on a terminal."""
    if sys.stdin is None or sys.stdin.closed:
        return None
    return None if sys.stdin.isatty() else sys.stdin

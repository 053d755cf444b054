from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lib.worker import CommandTasksFailed
from tests.worker.helpers import Harness, harness


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Any]:
    made: list[Harness] = []

    def build(**options: Any) -> Harness:
        h = harness(tmp_path / f"h{len(made)}", **options)
        made.append(h)
        return h

    yield build
    for h in made:
        with contextlib.suppress(CommandTasksFailed):
            h.worker.close()
        h.ledgers.close()

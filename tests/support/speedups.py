"""Run a test module once per hashing implementation: the pure-Python reference, and the
C extension lib._speedups where it was built.

    from tests.support.speedups import implementation  # noqa: F401  (autouse fixture)

The fixture is module scoped (hypothesis refuses function-scoped fixtures), so a module
runs all its tests with one implementation, then all with the other.
"""

from __future__ import annotations

import shutil
import sysconfig
from collections.abc import Iterator

import pytest

import lib.hashing

IMPLEMENTATIONS = ["python", "c"] if lib.hashing.speedups_available() else ["python"]


def compiler_available() -> bool:
    """Whether the C compiler Python was built with is on this machine (then the
    extension must have been built by the install)."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    return bool(cc) and shutil.which(cc[0]) is not None


@pytest.fixture(scope="module", params=IMPLEMENTATIONS, autouse=True)
def implementation(request: pytest.FixtureRequest) -> Iterator[str]:
    was_on = lib.hashing._c_encode is not None
    lib.hashing.use_speedups(request.param == "c")
    try:
        yield request.param
    finally:
        lib.hashing.use_speedups(was_on)

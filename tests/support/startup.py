"""Run the real `agentctl` console script under `python -X importtime` and say which
modules the process imported: the start-up tests' one runner."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from tests.support.cli import AGENTCTL


@dataclass
class StartupRun:
    returncode: int
    stdout: str
    stderr: str  # without the import-time lines
    modules: set[str]

    def imported(self, prefix: str) -> set[str]:
        """Modules named `prefix` or below it."""
        return {m for m in self.modules if m == prefix or m.startswith(prefix + ".")}


def run_with_imports(args: list[str], env: dict[str, str], timeout: float = 120) -> StartupRun:
    done = subprocess.run([sys.executable, "-X", "importtime", AGENTCTL, *args], env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    modules, other = set(), []
    for line in done.stderr.splitlines():
        if line.startswith("import time:"):
            name = line.rsplit("|", 1)[-1].strip()
            if name != "imported package":  # the header line
                modules.add(name)
        else:
            other.append(line)
    return StartupRun(done.returncode, done.stdout, "\n".join(other), modules)

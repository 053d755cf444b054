"""agentsview (the best installable peer, from PyPI) beside `agentctl sync` in the
end-to-end bench (sync_e2e_bench.py): installed into a venv of its own under the bench's
temporary directory, run on the same Codex home, stopped after AGENTSVIEW_TIMEOUT
seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.bench.measure import clock

AGENTSVIEW = "agentsview==0.46.1"
# its first sync of 25,000 threads did not finish in 20 minutes (issue 14): it is stopped
# after this many seconds, and the table says so
AGENTSVIEW_TIMEOUT = float(os.environ.get("AGENTSVIEW_TIMEOUT", "600"))


class AgentsView:
    """agentsview in a venv of its own under the bench's temporary directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.program: Path | None = None
        self.why_not = ""

    def install(self) -> bool:
        venv = self.root / "agentsview-venv"
        try:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
            subprocess.run([str(venv / "bin" / "pip"), "install", "-q", AGENTSVIEW], check=True,
                           capture_output=True, timeout=600)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            self.why_not = f"`pip install {AGENTSVIEW}` failed here ({type(exc).__name__})"
            return False
        self.program = venv / "bin" / "agentsview"
        return self.program.exists()

    def sync(self, codex_home: Path, data: Path) -> tuple[float, int, int] | None:
        """(seconds, peak RSS bytes, database bytes) of one `agentsview sync`, or None
        when it did not finish within AGENTSVIEW_TIMEOUT seconds (then it is killed)."""
        assert self.program is not None
        fake_home = data / "home"
        fake_home.mkdir(parents=True, exist_ok=True)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(fake_home), "AGENTSVIEW_NO_DAEMON": "1",
               "AGENTSVIEW_DATA_DIR": str(data), "CODEX_SESSIONS_DIR": str(codex_home / "sessions"),
               "DO_NOT_TRACK": "1", "AGENTSVIEW_TELEMETRY_ENABLED": "false"}
        start = clock()
        process = subprocess.Popen([str(self.program), "sync"], env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if clock() - start > AGENTSVIEW_TIMEOUT:
                os.killpg(process.pid, 9)
                os.wait4(process.pid, 0)
                process.returncode = -9
                return None
            time.sleep(0.2)
        seconds = clock() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise RuntimeError(f"agentsview sync exited {process.returncode}")
        size = sum(p.stat().st_size for p in data.glob("sessions.db*"))
        return seconds, usage.ru_maxrss * 1024, size

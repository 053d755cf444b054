"""Benchmark section: a running host (`lib.host.Host`), from another process's point of view.

The host runs in a child process (`python -m tests.bench.host_bench host FOLDER INTERVAL`)
built with the library, exactly as `agentctl serve` builds it, except that its one source's
driver is an instant one: a prompt writes `time.time()` and the command's text to a file
(one O_APPEND write) and succeeds at once. Everything else is real: the file-backed SQLite
store, the executor lock, the ledgers, the change feed, the collector thread, health.

- submit to start of execution: this process appends a prompt with the library and reads,
  from the driver's file, when the host started it; one command at a time. The same from
  starting an `agentctl command submit` process (which adds Python's start-up).
- idle host: CPU seconds and RSS of the host child over a minute with nothing to do; RSS
  after collection cycles 1 and 10 (a host collecting every half second).
- soak (not in --quick): 50 collection cycles and 500 commands; threads, open files and
  RSS at ready, after the first 10 commands (the baseline growth is counted from) and at
  the end.

Each measure runs in a process of its own (`run_child`) that starts its own host child,
so one measure's garbage, caches and threads never show in another's numbers.

Targets: submit-to-start median <= 250 ms; idle CPU <= 2% of one core; RSS after cycle 10
<= RSS after cycle 1 + 10%; in the soak, threads +2, open files +4, RSS +15% at most.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from tests.bench.measure import median_ms, p95_ms, run_child

SOURCE = "instant"
SESSIONS = 5
LATENCY_TARGET_MS = 250.0
IDLE_CPU_TARGET = 0.02  # of one core
CYCLE_RSS_ALLOWANCE = 0.10
SOAK_ALLOWANCE = {"threads": 2, "fds": 4}
SOAK_RSS_ALLOWANCE = 0.15
CYCLE_INTERVAL = 0.5  # seconds between collections where cycles are counted
GUARD_SECONDS = 120  # a host that never answers fails the bench instead of hanging it
REPO = Path(__file__).resolve().parents[2]


# -- the folder the bench and the host share --------------------------------------------


def prepare(folder: Path) -> None:
    """A configuration with one source (a Codex source, so the configuration loads; its
    home is empty because the host is given its own driver) and a private state dir."""
    (folder / "codex-home").mkdir()
    (folder / "config.toml").write_text(
        f'[sources.{SOURCE}]\ndriver = "codex-app-server"\ncodexHome = "{folder / "codex-home"}"\n')


def open_workspace(folder: Path) -> Any:
    from lib.workspace import Workspace

    return Workspace(config_path=folder / "config.toml", store_url=f"sqlite:///{folder / 'fabric.db'}",
                     state_dir=folder / "state")


def cli_environment(folder: Path) -> dict[str, str]:
    """The same places for an `agentctl` process, given through its environment."""
    return {**os.environ, "AGENTCTL_CONFIG": str(folder / "config.toml"),
            "AGENTCTL_STORE": f"sqlite:///{folder / 'fabric.db'}", "AGENTCTL_STATE_DIR": str(folder / "state")}


def started_log(folder: Path) -> Path:
    return folder / "started.log"


# -- the host child ----------------------------------------------------------------------


def host(folder: str, interval: str) -> None:
    """The child: run a host until stdin closes. Prints `ready` once health says so, then
    `cycle N` each time a collection finishes (N counts the startup collection)."""
    from lib.host import Host
    from tests.support.sessions import make_snapshot

    where = Path(folder)
    from tests.bench.instant_driver import InstantDriver
    snapshots = [make_snapshot(f"s{n}") for n in range(SESSIONS)]
    host = Host(open_workspace(where), interval=float(interval),
                driver_factory=lambda source_id: InstantDriver(started_log(where), source_id=source_id,
                                                               snapshots=snapshots))

    def report() -> None:
        deadline = time.monotonic() + GUARD_SECONDS
        while host.health is None or host.health.record()["status"] != "ready":
            if host.stopping or time.monotonic() > deadline:
                return
            time.sleep(0.01)
        print("ready", flush=True)
        seen = 0
        while not host.stopping:
            if host.collections != seen:
                seen = host.collections
                print(f"cycle {seen}", flush=True)
            time.sleep(0.01)

    def stop_when_stdin_closes() -> None:
        sys.stdin.read()
        host.stop()

    threading.Thread(target=report, daemon=True).start()
    threading.Thread(target=stop_when_stdin_closes, daemon=True).start()
    host.run()


class HostChild:
    """A host child process over a prepared folder, seen from outside through /proc."""

    def __init__(self, folder: Path, interval: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.bench.host_bench", "host", str(folder), str(interval)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
        self.pid = self.process.pid
        if self._line() != "ready":
            raise RuntimeError("the host child did not become ready")

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the host child exited ({self.process.wait(GUARD_SECONDS)})")
        return line.strip()

    def wait_cycle(self, count: int) -> int:
        """Block until the host has finished `count` collections; the count it printed."""
        while True:
            line = self._line()
            if line.startswith("cycle ") and int(line.split()[1]) >= count:
                return int(line.split()[1])

    def sample(self) -> dict[str, float]:
        return process_sample(self.pid)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # the child stops its host in order
        if self.process.wait(GUARD_SECONDS) != 0:
            raise RuntimeError(f"the host child exited {self.process.returncode}")

    def __enter__(self) -> HostChild:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            self.process.kill()
        self.close()


def process_sample(pid: int) -> dict[str, float]:
    """CPU seconds (user + system), RSS bytes, threads and open files of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime: fields 14 and 15
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {
        "cpu": cpu,
        "rss": int(status["VmRSS"].split()[0]) * 1024,
        "threads": int(status["Threads"]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
    }


# -- the bench side ----------------------------------------------------------------------


class StartLog:
    """Reads the driver's file as it grows: when did the prompt with this text start."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.started: dict[str, float] = {}

    def wait_for(self, text: str) -> float:
        deadline = time.monotonic() + GUARD_SECONDS
        while text not in self.started:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the prompt {text!r} never started")
            self._read()
            if text not in self.started:
                time.sleep(0.001)
        return self.started[text]

    def _read(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        complete = data[: data.rfind(b"\n") + 1]  # a line without its newline is read next time
        self.offset += len(complete)
        for line in complete.decode().splitlines():
            stamp, text = line.split(" ", 1)
            self.started[text] = float(stamp)


def _prompt_text(n: int) -> str:
    return f"bench {n} {uuid.uuid4()}"  # unique, so the log line is this command's


def _append_and_wait(workspace: Any, log: StartLog, n: int) -> tuple[float, Any]:
    """Append one prompt with the library; seconds until the host started it, and the command."""
    from lib.command_submit import build_command

    text = _prompt_text(n)
    command = build_command(workspace, "prompt", SOURCE, f"s{n % SESSIONS}", {"text": text})
    start = time.time()  # wall clock: the child's stamp is time.time() too
    workspace.open_target().append_command(command)
    return log.wait_for(text) - start, command


def _wait_receipt(workspace: Any, command_id: str) -> None:
    from lib.command_submit import wait_for_receipt

    receipt = wait_for_receipt(workspace.open_target(), command_id)
    assert receipt is not None and receipt.status == "succeeded", receipt


def submit_latency(count: int) -> dict[str, Any]:
    """Library appends, one at a time; each waits for the previous receipt (untimed) so
    every command meets an idle host."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        prepare(folder)
        with HostChild(folder, interval=0):
            workspace = open_workspace(folder)
            log = StartLog(started_log(folder))
            latencies = []
            for n in range(count):
                seconds, command = _append_and_wait(workspace, log, n)
                latencies.append(seconds)
                _wait_receipt(workspace, command.id)
            workspace.close()
    return {"latencies": latencies}


def cli_latency(count: int) -> dict[str, Any]:
    """From starting `agentctl command submit` to the start of execution."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        prepare(folder)
        environment = cli_environment(folder)
        with HostChild(folder, interval=0):
            workspace = open_workspace(folder)
            log = StartLog(started_log(folder))
            latencies = []
            for n in range(count):
                text = _prompt_text(n)
                start = time.time()
                process = subprocess.Popen(
                    [str(REPO / ".venv" / "bin" / "agentctl"), "command", "submit", "prompt", SOURCE,
                     f"s{n % SESSIONS}", "--text", text],
                    env=environment, stdout=subprocess.PIPE, text=True)
                latencies.append(log.wait_for(text) - start)
                out, _ = process.communicate(timeout=GUARD_SECONDS)
                if process.returncode != 0:
                    raise RuntimeError(f"agentctl command submit exited {process.returncode}")
                _wait_receipt(workspace, out.strip())
            workspace.close()
    return {"latencies": latencies}


def idle(seconds: float) -> dict[str, Any]:
    """A host with no schedule and no commands: CPU and RSS over `seconds`."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        prepare(folder)
        with HostChild(folder, interval=0) as child:
            time.sleep(1.0)  # past the start-up's last health publication
            before, start = child.sample(), time.monotonic()
            time.sleep(seconds)
            after, wall = child.sample(), time.monotonic() - start
    return {"seconds": wall, "cpu": after["cpu"] - before["cpu"], "rssBefore": before["rss"],
            "rssAfter": after["rss"]}


def cycles(count: int) -> dict[str, Any]:
    """A host collecting every CYCLE_INTERVAL seconds: RSS after cycle 1 and cycle `count`."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        prepare(folder)
        with HostChild(folder, interval=CYCLE_INTERVAL) as child:
            first = {"cycle": child.wait_cycle(1)} | child.sample()
            last = {"cycle": child.wait_cycle(count)} | child.sample()
    return {"first": first, "last": last}


def soak(collections: int, commands: int) -> dict[str, Any]:
    """`commands` prompts, one at a time, while the host collects every CYCLE_INTERVAL
    seconds, until both are done; the host's resources at ready, after a warm-up (the
    first commands load what the command path imports once), and at the end."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        prepare(folder)
        with HostChild(folder, interval=CYCLE_INTERVAL) as child:
            start = child.sample()
            workspace = open_workspace(folder)
            log = StartLog(started_log(folder))
            warm = None
            for n in range(commands):
                _, command = _append_and_wait(workspace, log, n)
                if n == 9:
                    _wait_receipt(workspace, command.id)
                    warm = child.sample()
            _wait_receipt(workspace, command.id)
            cycle = child.wait_cycle(collections)
            end = child.sample()
            workspace.close()
    return {"start": start, "warm": warm, "end": end, "cycles": cycle, "commands": commands}



# -- the section ---------------------------------------------------------------------------


def _mb(value: float) -> str:
    return f"{value / 1e6:.1f}"


def _latency(report: Any) -> None:
    count = 20 if report.quick else 50
    library = run_child("tests.bench.host_bench", "submit_latency", count)["latencies"]
    cli = run_child("tests.bench.host_bench", "cli_latency", 10)["latencies"]
    report.table(
        "Host: submit to start of execution (host in another process, instant driver, SQLite)",
        ["submitted by", "commands", "median ms", "p95 ms"],
        [["this process (library append)", count, median_ms(library), p95_ms(library)],
         ["an `agentctl command submit` process (with its start-up)", 10, median_ms(cli), p95_ms(cli)]],
    )
    median = statistics.median(library) * 1000
    report.check("host: submit to start of execution", median <= LATENCY_TARGET_MS,
                 f"median {median:.1f} ms (target <= {LATENCY_TARGET_MS:.0f} ms)")


def _idle(report: Any) -> None:
    seconds = 15 if report.quick else 60
    quiet = run_child("tests.bench.host_bench", "idle", seconds)
    cycled = run_child("tests.bench.host_bench", "cycles", 10)
    share = quiet["cpu"] / quiet["seconds"]
    first, last = cycled["first"], cycled["last"]
    report.table(
        "Host: idle (nothing to do) and across collection cycles",
        ["measure", "CPU s", "CPU % of a core", "RSS MB before", "RSS MB after"],
        [[f"idle for {quiet['seconds']:.0f} s", f"{quiet['cpu']:.2f}", f"{share * 100:.2f}",
          _mb(quiet["rssBefore"]), _mb(quiet["rssAfter"])],
         [f"collection cycles {first['cycle']} to {last['cycle']} (every {CYCLE_INTERVAL} s)",
          f"{last['cpu'] - first['cpu']:.2f}", "-", _mb(first["rss"]), _mb(last["rss"])]],
    )
    report.check("host: idle CPU", share <= IDLE_CPU_TARGET,
                 f"CPU {share * 100:.2f}% of one core over {quiet['seconds']:.0f} s (target <= {IDLE_CPU_TARGET:.0%})")
    growth = last["rss"] / first["rss"] - 1
    report.check("host: memory flat across collection cycles", growth <= CYCLE_RSS_ALLOWANCE,
                 f"RSS after cycle {last['cycle']} {growth:+.1%} of cycle {first['cycle']} "
                 f"(target <= +{CYCLE_RSS_ALLOWANCE:.0%})")


def _soak(report: Any) -> None:
    result = run_child("tests.bench.host_bench", "soak", 50, 500)
    start, warm, end = result["start"], result["warm"], result["end"]
    report.table(
        f"Host soak: {result['cycles']} collection cycles and {result['commands']} commands",
        ["resource", "at ready", "after 10 commands", "at the end", "allowance"],
        [["threads", start["threads"], warm["threads"], end["threads"], f"+{SOAK_ALLOWANCE['threads']}"],
         ["open files", start["fds"], warm["fds"], end["fds"], f"+{SOAK_ALLOWANCE['fds']}"],
         ["RSS MB", _mb(start["rss"]), _mb(warm["rss"]), _mb(end["rss"]), f"+{SOAK_RSS_ALLOWANCE:.0%}"]],
    )
    # Growth is counted from after the first commands: they start the worker's threads,
    # each with its own store connection, once; what must not grow is what comes after.
    # The worker's thread pools keep a thread per task that ever ran at the same time, so
    # a rise within the allowance is their peak concurrency, not a leak.
    for name, label in (("threads", "threads"), ("fds", "open files")):
        grown = end[name] - warm[name]
        report.check(f"host soak: {label}", grown <= SOAK_ALLOWANCE[name],
                     f"{warm[name]} -> {end[name]} ({grown:+d}; allowance +{SOAK_ALLOWANCE[name]})")
    growth = end["rss"] / warm["rss"] - 1
    report.check("host soak: memory", growth <= SOAK_RSS_ALLOWANCE,
                 f"{_mb(warm['rss'])} -> {_mb(end['rss'])} MB ({growth:+.1%}; allowance +{SOAK_RSS_ALLOWANCE:.0%})")


def run(report: Any) -> None:
    _latency(report)
    _idle(report)
    if report.quick:
        report.note("host soak (50 collection cycles, 500 commands): full run only")
    else:
        _soak(report)


if __name__ == "__main__":
    if sys.argv[1:2] == ["host"]:
        host(sys.argv[2], sys.argv[3])
    else:
        from tests.bench.run import Report

        result = Report(quick="--quick" in sys.argv)
        run(result)
        print(result.render())

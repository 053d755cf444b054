"""How a Codex source's `app-server` child is launched: program, mode, environment.

| mode      | steps                                                              | framing   |
| --------- | ------------------------------------------------------------------ | --------- |
| `stdio`   | `codex app-server --listen stdio://`                               | lines     |
| `managed` | `codex app-server daemon start`, then `codex app-server proxy`     | WebSocket |
| `proxy`   | `codex app-server proxy [--sock PATH]`                             | WebSocket |

The proxy relays the daemon's control socket, which speaks WebSocket, so the proxy modes
frame each JSON-RPC message as a WebSocket text frame over the proxy's stdio.
An explicit `command` is used verbatim in place of every derived step (no daemon start);
the mode still picks the framing. The program is `codexBin`, else `$CODEX_BIN`, else `codex`
on PATH. `CODEX_HOME` and the source's `env` go to the child only, never to this process.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lib.drivers.base import CancelSignal, DriverError, DriverUnavailable
from lib.drivers.codex_home_files import find_codex_program
from lib.types import AgentSourceConfig

if TYPE_CHECKING:  # the transport (and its WebSocket library) only when a child is run
    from lib.drivers.jsonrpc_transport import Framing

INSTALL_HINT = (
    "install it with `npm install -g @openai/codex` (agentctl's `make install` puts a pinned "
    "copy in node_modules), or set codexBin in the source configuration or CODEX_BIN in the "
    "environment to the codex program"
)


@dataclass(frozen=True)
class CodexLaunch:
    argv: list[str]
    env: dict[str, str]
    cwd: str | None
    framing: Framing
    daemon_argv: list[str] | None = None  # managed mode: run this (and wait) first
    # the child confined to one CPU (lib/drivers/one_cpu.py): a `stdio` child that only
    # collects, unless the source sets collectOnOneCpu = false (a proxy's work is the daemon's)
    one_cpu: bool = False


def resolve_codex_program(config: AgentSourceConfig, environ: Mapping[str, str]) -> str:
    """codexBin, then CODEX_BIN, then `codex` on PATH; DriverUnavailable if none resolves.
    The search is codex_home_files.find_codex_program's, which the idle fast path uses
    too, so both always pick the same program."""
    found = find_codex_program(config.codex_bin, environ)
    if found is not None:
        return found
    for origin, candidate in (("codexBin", config.codex_bin), ("CODEX_BIN", environ.get("CODEX_BIN"))):
        if candidate:
            raise DriverUnavailable(
                "program-not-found",
                f"{origin} names {candidate!r}, which is not an executable program; "
                f"{INSTALL_HINT} (source {config.id})",
            )
    raise DriverUnavailable(
        "program-not-found", f"the codex program was not found on PATH; {INSTALL_HINT} (source {config.id})"
    )


def child_environment(config: AgentSourceConfig, environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    env.update(config.env)
    if config.codex_home:
        env["CODEX_HOME"] = os.path.abspath(os.path.expanduser(config.codex_home))
    return env


def plan_launch(config: AgentSourceConfig, environ: Mapping[str, str] | None = None, *,
                collecting: bool = False) -> CodexLaunch:
    """`collecting`: the child will only list and read (no prompt runs on it)."""
    environ = os.environ if environ is None else environ
    env = child_environment(config, environ)
    mode = config.codex_transport
    framing: Framing = "lines" if mode == "stdio" else "websocket"
    one_cpu = collecting and mode == "stdio" and config.collect_on_one_cpu
    if config.command:
        return CodexLaunch(argv=list(config.command), env=env, cwd=config.cwd, framing=framing, one_cpu=one_cpu)
    program = resolve_codex_program(config, environ)
    if mode == "stdio":
        return CodexLaunch([program, "app-server", "--listen", "stdio://"], env, config.cwd, framing,
                           one_cpu=one_cpu)
    proxy = [program, "app-server", "proxy"]
    if mode == "proxy":
        if config.codex_socket:
            proxy += ["--sock", os.path.expanduser(config.codex_socket)]
        return CodexLaunch(proxy, env, config.cwd, framing)
    return CodexLaunch(proxy, env, config.cwd, framing,
                       daemon_argv=[program, "app-server", "daemon", "start"])


def start_daemon(launch: CodexLaunch, signal: CancelSignal | None = None) -> None:
    """Run `daemon start` (a no-op when the daemon already runs); cancellable."""
    if not launch.daemon_argv:
        return
    try:
        process = subprocess.Popen(
            launch.daemon_argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=launch.env, cwd=launch.cwd,
        )
    except OSError as exc:
        raise DriverUnavailable("program-not-found", f"cannot run {launch.daemon_argv[0]}: {exc.strerror}") from None
    try:
        while True:
            try:
                _, stderr = process.communicate(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                if signal is not None and signal.cancelled:
                    process.kill()
                    process.communicate()
                    signal.raise_if_cancelled()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if process.returncode != 0:
        from lib.drivers.child_channels import provider_output, report_provider_output

        # Its stderr is its own (it can hold a key): the detail, never the message.
        detail = provider_output(stderr.decode("utf-8", "replace").splitlines())
        report_provider_output("codex app-server daemon start", detail)
        raise DriverError(
            "start-failed",
            f"`codex app-server daemon start` failed with code {process.returncode}"
            + ("; agentctl -v shows what it wrote" if detail else ""),
            detail=detail,
        )

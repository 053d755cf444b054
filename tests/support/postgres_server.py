"""A throwaway PostgreSQL server for tests: initdb and pg_ctl from the system's
PostgreSQL (`/usr/lib/postgresql/*/bin`, or `pg_config --bindir`), on a Unix socket only.

    server = PostgresServer.start()     # about 2 s
    url = server.create_database()      # a fresh database per test
    server.stop()                       # also at exit, and when the test run fails

`initdb` refuses to run as root, so as root the server runs as `nobody`, in a private
temporary directory handed to that user; otherwise it runs as the current user.
`listen_addresses=''` keeps it off every network interface: the socket in the
directory is the only way in. Durability is switched off (fsync) because the data is
thrown away; the store's behaviour does not depend on it.

`python -m tests.support.postgres_server` starts one and prints its URL (for trying
agentctl against it by hand; Ctrl-C stops it).
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

USER = "agent"


def postgres_bindir() -> Path | None:
    """The directory of initdb and pg_ctl, newest version first; None when absent."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True):
        if os.access(os.path.join(candidate, "initdb"), os.X_OK):
            return Path(candidate)
    pg_config = shutil.which("pg_config")
    if pg_config:
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True).stdout.strip()
        if found and os.access(os.path.join(found, "initdb"), os.X_OK):
            return Path(found)
    return None


def _version(path: str) -> float:
    try:
        return float(Path(path).parent.name)
    except ValueError:
        return 0.0


class PostgresServer:
    def __init__(self, bindir: Path, root: Path, as_user: pwd.struct_passwd | None) -> None:
        self.bindir = bindir
        self.root = root
        self.data = root / "data"
        self.socket_dir = root / "socket"
        self.log = root / "server.log"
        self._as = as_user
        self._names = itertools.count(1)
        self._running = False

    @classmethod
    def start(cls, bindir: Path | None = None) -> PostgresServer:
        bindir = bindir or postgres_bindir()
        if bindir is None:
            raise RuntimeError(
                "PostgreSQL's server programs were not found in /usr/lib/postgresql/*/bin; "
                "install them (apt-get install postgresql)"
            )
        as_user = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
        root = Path(tempfile.mkdtemp(prefix="agentctl-pg-"))
        server = cls(bindir, root, as_user)
        server.socket_dir.mkdir(mode=0o700)
        if as_user is not None:
            for path in (root, server.socket_dir):
                os.chown(path, as_user.pw_uid, as_user.pw_gid)
        atexit.register(server.stop)
        try:
            server._run("initdb", "-D", str(server.data), "-U", USER, "--auth=trust",
                        "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
            options = (
                f"-k {server.socket_dir} -c listen_addresses='' -c fsync=off "
                f"-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
            )
            server._run("pg_ctl", "-D", str(server.data), "-o", options, "-w", "-t", "60",
                        "-l", str(server.log), "start")
            server._running = True
        except BaseException:
            server.stop()
            raise
        return server

    def _run(self, program: str, *args: str) -> None:
        options: dict = {}
        if self._as is not None:
            options = dict(user=self._as.pw_uid, group=self._as.pw_gid, extra_groups=[])
        result = subprocess.run(
            [str(self.bindir / program), *args], capture_output=True, text=True,
            cwd=self.root, timeout=120, **options,
        )
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{program} failed ({result.returncode}): {result.stderr.strip()}\n{log}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@/{database}?host={self.socket_dir}"

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = name or f"test_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (fast shutdown: sessions are ended) and remove its files."""
        if self._running:
            self._running = False
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            except Exception:
                pass
        shutil.rmtree(self.root, ignore_errors=True)


if __name__ == "__main__":
    import signal
    import sys

    # SIGTERM (and SIGINT, which a shell's background job ignores) stop the server too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    running = PostgresServer.start()
    print(running.create_database("agentctl"), flush=True)
    try:
        signal.pause()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        running.stop()

"""A failing provider's stderr is never stored nor recorded: real `agentctl` processes,
a real SQLite store, and small stand-in `codex` programs (set as `codexBin`) that write a
planted key to stderr and exit, at start or in the middle of a read.

Errors carry a code and agentctl's own message; the provider's own output reaches our
stderr only with -v, as a bounded tail (the last 20 lines, at most 4 KiB).
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from tests.support.cli import agentctl_env, run

PLANTED = "sk-live-PLANTED0123456789abcdef"
EARLY = "sk-live-EARLYPLANTEDbeyondthetail"  # written before 40 more lines: outside the tail
NOISE_LINES = 40

EXITS_AT_START = f"""#!/bin/sh
echo "warning: {EARLY}" >&2
i=0
while [ $i -lt {NOISE_LINES} ]; do echo "noise line $i $(printf '%0200d' 0)" >&2; i=$((i+1)); done
echo "Error: the API rejected the key {PLANTED}" >&2
exit 1
"""

# Answers the handshake and lists one thread, then dies on the read, key on stderr.
EXITS_MID_READ = f"""#!{sys.executable}
import json, sys
THREAD = {{"id": "019c47da-1300-7835-8405-a03ed5000991", "preview": "Why is CI red?",
          "createdAt": 1770732000, "updatedAt": 1770732000, "status": {{"type": "notLoaded"}}}}
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message["method"]
    if method == "thread/read":
        sys.stderr.write("thread store exploded, token {PLANTED}\\n")
        sys.stderr.flush()
        sys.exit(2)
    if method == "initialize":
        result = {{"userAgent": "fake-codex/0.0.1"}}
    else:
        archived = message["params"].get("archived")
        result = {{"data": [] if archived else [THREAD], "nextCursor": None}}
    sys.stdout.write(json.dumps({{"id": message["id"], "result": result}}) + "\\n")
    sys.stdout.flush()
"""


@pytest.fixture
def world(tmp_path):
    def make(program: str):
        codex = tmp_path / "codex"
        codex.write_text(textwrap.dedent(program))
        codex.chmod(0o755)
        (tmp_path / "codex-home").mkdir(exist_ok=True)
        config = tmp_path / "config.toml"
        config.write_text(f'[sources.codex]\ndriver = "codex-app-server"\n'
                          f'codexHome = "{tmp_path / "codex-home"}"\ncodexBin = "{codex}"\n')
        return agentctl_env(tmp_path / "state", config, AGENTCTL_STORE=f"sqlite:///{tmp_path / 'fabric.sqlite3'}")

    return tmp_path, make


def store_bytes(tmp_path) -> bytes:
    """Every file of the store after the processes ended: database, WAL, lock notes."""
    found = sorted(tmp_path.glob("fabric.sqlite3*"))
    files = [path for path in found if path.is_file()]
    files += [path for folder in found if folder.is_dir() for path in sorted(folder.rglob("*")) if path.is_file()]
    return b"".join(path.read_bytes() for path in files)


def assert_bounded_tail_on_stderr(stderr: str) -> None:
    assert PLANTED in stderr
    assert EARLY not in stderr  # beyond the last 20 lines
    assert sum("noise line" in line for line in stderr.splitlines()) < 20
    assert len(stderr.encode()) < 4096 + 2048  # the tail plus our own lines


def test_stderr_of_a_codex_that_fails_to_start_is_never_stored_and_shown_only_with_v(world):
    tmp_path, make = world
    env = make(EXITS_AT_START)

    synced = run(["sync", "codex"], env)
    assert synced.returncode != 0
    [error] = synced.of("error")
    assert (error["stage"], error["code"]) == ("start", "start-failed")
    assert "exited with code 1" in error["message"]
    listed = run(["list", "codex"], env)
    assert listed.returncode == 1 and "exited with code 1" in listed.stderr

    # The failure was published (the source's row keeps its start error), in our words only.
    assert b"exited with code 1" in store_bytes(tmp_path)
    for where, text in (("sync's records", synced.stdout), ("sync's stderr", synced.stderr),
                        ("list's output", listed.stdout + listed.stderr)):
        assert PLANTED not in text and EARLY not in text, where
    assert PLANTED.encode() not in store_bytes(tmp_path)
    assert EARLY.encode() not in store_bytes(tmp_path)

    verbose_sync = run(["sync", "codex", "-v"], env)
    verbose_list = run(["-v", "list", "codex"], env)
    assert PLANTED not in verbose_sync.stdout and PLANTED not in verbose_list.stdout
    assert_bounded_tail_on_stderr(verbose_sync.stderr)
    offered, traceback = verbose_list.stderr.split("Traceback", 1)
    assert_bounded_tail_on_stderr(offered)
    assert PLANTED not in traceback  # the exception's message is ours
    assert PLANTED.encode() not in store_bytes(tmp_path)


def test_stderr_of_a_codex_that_dies_in_a_read_is_never_stored_and_shown_only_with_v(world):
    tmp_path, make = world
    env = make(EXITS_MID_READ)

    synced = run(["sync", "codex"], env)
    assert synced.returncode == 3, synced.stderr
    read_errors = [error for error in synced.of("error") if error["stage"] == "read"]
    assert [error["code"] for error in read_errors] == ["transport-closed"]
    assert "exited with code 2" in read_errors[0]["message"]
    sessions = run(["sessions", "--json"], env)
    assert sessions.returncode == 0
    # The failure was published (the source's row keeps its errors), in our words only.
    assert b"exited with code 2" in store_bytes(tmp_path)

    for where, text in (("sync's records", synced.stdout), ("sync's stderr", synced.stderr),
                        ("sessions", sessions.stdout)):
        assert PLANTED not in text, where
    assert PLANTED.encode() not in store_bytes(tmp_path)

    verbose = run(["-v", "sync", "codex"], env)
    assert PLANTED not in verbose.stdout
    assert PLANTED in verbose.stderr and len(verbose.stderr.encode()) < 4096 + 2048
    assert PLANTED.encode() not in store_bytes(tmp_path)

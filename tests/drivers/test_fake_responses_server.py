"""The fake model server used by the prompt tests stops by itself when run as a child."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import requests

SERVER = Path(__file__).resolve().parents[1] / "support" / "fake_responses_server.py"


def spawn(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, str(SERVER), *args], stdin=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    url = process.stderr.readline().split("listening on ", 1)[1].strip()
    return process, url


def test_the_fake_model_child_binds_loopback_and_exits_when_its_parent_closes_stdin():
    process, url = spawn()
    try:
        assert url.startswith("http://127.0.0.1:")
        answer = requests.post(f"{url}/responses", json={"input": []}, timeout=10)
        assert answer.status_code == 200 and "response.completed" in answer.text
    finally:
        process.stdin.close()  # what the parent's exit does to the pipe
        assert process.wait(timeout=30) == 0


def test_the_fake_model_child_exits_by_itself_after_its_idle_timeout():
    process, _ = spawn("--idle-timeout", "0.2")
    try:
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

"""ACP agents the tests run: the project's test agent and a real third-party agent.

* `agent_argv(home, ...)`: tests/support/acp_test_agent.py on this Python, run as
  a script (the agent gets a trimmed environment, so no PYTHONPATH), keeping its sessions
  under `home`.
* `codex_acp_home(path, base_url)`: a Codex home for the real `codex-acp` agent (npm
  `@zed-industries/codex-acp`, pinned in package.json), pointed at the fake OpenAI
  Responses API (tests/support/fake_responses_server.py) on 127.0.0.1. codex-acp gates
  every session call behind `authenticate`; the source's `env` sets `CODEX_API_KEY` (any
  value: the fake takes it), which makes the driver authenticate with `codex-api-key`.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEST_AGENT = REPO / "tests/support/acp_test_agent.py"
# The native binary the package's Node shim would start (skips a Node start-up).
CODEX_ACP = REPO / "node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp"
DUMMY_KEY = "sk-test-not-a-real-key"


def agent_argv(home: Path | str, *args: str) -> list[str]:
    return [sys.executable, str(TEST_AGENT), "--home", str(home), *args]


def codex_acp_home(path: Path, base_url: str) -> Path:
    """A private Codex home whose model provider is the fake Responses API."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    (path / "config.toml").write_text(
        'model = "fake-model"\n'
        'model_provider = "fake"\n'
        'approval_policy = "never"\n'
        'sandbox_mode = "read-only"\n\n'
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{base_url}"\n'
        'wire_api = "responses"\n'
        'env_key = "CODEX_API_KEY"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n",
        encoding="utf-8",
    )
    return path


def codex_acp_env(home: Path) -> dict[str, str]:
    """The source `env` of a codex-acp source over `home`."""
    return {"CODEX_HOME": str(home), "CODEX_API_KEY": DUMMY_KEY}

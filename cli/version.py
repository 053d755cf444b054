"""agentctl's version, readable without importing anything: `agentctl --version` prints
it at once. pyproject.toml's `version` must equal it (tests/test_startup_version.py)."""

VERSION = "0.1.0"

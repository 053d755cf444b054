"""The project's test agent sends `available_commands_update` after a load's (or a new
session's) response is on the wire, never before: the driver rightly counts an update
that arrives before the response as part of the load, so a test agent that raced a
timer against its own response made reads of 8 events out of 7 under load.

Spoken to over its stdio with raw JSON-RPC lines, no driver in between."""

from __future__ import annotations

import json
import subprocess

from tests.support.acp_agents import agent_argv

GUARD = 60  # seconds; a hang guard only


def exchange(agent: subprocess.Popen, request: dict, then_notifications: int) -> list[dict]:
    """Send one request; every line until its response, then `then_notifications` more."""
    agent.stdin.write(json.dumps(request) + "\n")
    agent.stdin.flush()
    lines: list[dict] = []
    while not lines or lines[-1].get("id") != request["id"]:
        lines.append(json.loads(agent.stdout.readline()))
    for _ in range(then_notifications):
        lines.append(json.loads(agent.stdout.readline()))
    return lines


def test_available_commands_come_after_the_response_of_each_load_and_new_session(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    agent = subprocess.Popen(agent_argv(home, "--seed", "3"), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        exchange(agent, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"protocolVersion": 1}}, 0)
        for n in range(10):
            session = f"seed-{n % 3:03d}"
            load = exchange(agent, {"jsonrpc": "2.0", "id": 1 + n, "method": "session/load",
                                    "params": {"sessionId": session, "cwd": "/tmp", "mcpServers": []}}, 1)
            updates = [line["params"]["update"]["sessionUpdate"] for line in load if line.get("method")]
            assert updates[:-1] == ["user_message_chunk", "agent_thought_chunk", "plan", "tool_call",
                                    "tool_call_update", "agent_message_chunk", "agent_message_chunk"]
            assert load[-2].get("id") == 1 + n  # the response, then the commands
            assert updates[-1] == "available_commands_update"
        new = exchange(agent, {"jsonrpc": "2.0", "id": 99, "method": "session/new",
                               "params": {"cwd": "/tmp", "mcpServers": []}}, 1)
        assert new[0].get("id") == 99 and "result" in new[0]
        assert new[1]["params"]["update"]["sessionUpdate"] == "available_commands_update"
    finally:
        agent.stdin.close()
        agent.wait(GUARD)

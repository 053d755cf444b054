"""AgentStream tells of a request's answer in wire order: a load's recording ends at its
answer, so an update the agent writes right after it (codex-acp's
`available_commands_update`) is no part of the read, even when both lines arrive in one
read from the pipe, as they do on a busy machine. Before, the recording ended only when
the load's caller resumed, some loop turns later, and such a read held 8 events of 7.

The agent's side is bytes fed to a real asyncio StreamReader, the same object the
driver reads the agent's stdout through."""

from __future__ import annotations

import asyncio
import json

from lib.drivers.acp_stream import AgentStream
from lib.drivers.acp_updates import UpdateLog


class _Writer:
    """Where the stream writes our requests (the agent's stdin)."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.lines.append(data)

    async def drain(self) -> None:
        return None

    def is_closing(self) -> bool:
        return False


def line(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"


def update(kind: str) -> dict:
    return {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s1", "update": {"sessionUpdate": kind}}}


async def recording_stream(request: dict) -> tuple[asyncio.StreamReader, AgentStream, list]:
    """A stream over an in-memory reader, session s1's updates being recorded, and
    `request` sent through it."""
    reader = asyncio.StreamReader()
    updates = UpdateLog()
    stream = AgentStream("acp (test)", reader, _Writer(), on_update=updates.record,
                         on_answered=updates.answered)
    recording = updates.begin("s1")
    await stream.send(request)
    return reader, stream, recording


def test_an_update_in_the_same_read_as_the_loads_answer_is_not_recorded_for_the_load():
    async def scenario() -> tuple[list, list]:
        reader, stream, recording = await recording_stream({"jsonrpc": "2.0", "id": 7, "method": "session/load",
                                                            "params": {"sessionId": "s1", "cwd": "/", "mcpServers": []}})
        # the replay, the answer and the commands advertised after it: one chunk
        reader.feed_data(line(update("user_message_chunk")) + line(update("agent_message_chunk"))
                         + line({"jsonrpc": "2.0", "id": 7, "result": {}})
                         + line(update("available_commands_update")))
        reader.feed_eof()
        answered = await stream.receive()
        after = await stream.receive()  # the SDK reads on before the load's caller resumes
        return recording, [answered, after]

    recording, received = asyncio.run(scenario())
    assert [u["sessionUpdate"] for u in recording] == ["user_message_chunk", "agent_message_chunk"]
    assert received == [{"jsonrpc": "2.0", "id": 7, "result": {}}, None]


def test_answers_to_other_requests_end_no_recording():
    async def scenario() -> list:
        reader, stream, recording = await recording_stream({"jsonrpc": "2.0", "id": 1, "method": "session/set_mode",
                                                            "params": {"sessionId": "s1", "modeId": "ask"}})
        reader.feed_data(line({"jsonrpc": "2.0", "id": 1, "result": {}}) + line(update("plan")))
        reader.feed_eof()
        await stream.receive()
        await stream.receive()
        return recording

    assert [u["sessionUpdate"] for u in asyncio.run(scenario())] == ["plan"]

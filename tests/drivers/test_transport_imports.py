"""The JSON-RPC transport in `stdio` mode does not load the WebSocket stack (wsproto, h11):
only a proxy mode's channel imports it, when it is made (session 23, issue 14's listing
idle sync: about 70 ms of a loaded start-up)."""

from __future__ import annotations

import subprocess
import sys

from lib.drivers import child_output, websocket_pipe


def _modules_after(code: str) -> set[str]:
    script = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    return set(out.stdout.split())


def test_the_codex_driver_and_its_transport_load_no_websocket_library():
    loaded = _modules_after("import lib.drivers.codex_app_server, lib.drivers.jsonrpc_transport")
    assert "lib.drivers.jsonrpc_transport" in loaded
    assert not {name for name in loaded if name.split(".")[0] in ("wsproto", "h11")}
    assert "lib.drivers.websocket_pipe" not in loaded


def test_a_websocket_channel_loads_it_when_made():
    loaded = _modules_after(
        "import io\n"
        "from lib.drivers.child_channels import WebSocketChannel\n"
        "WebSocketChannel(io.BytesIO(), io.BytesIO(), 1024)"
    )
    assert {"wsproto", "lib.drivers.websocket_pipe"} <= loaded


def test_the_websocket_error_is_one_class():
    assert websocket_pipe.WebSocketError is child_output.WebSocketError

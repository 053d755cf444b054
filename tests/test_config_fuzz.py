"""The configuration loader, fuzzed: whatever the file holds, `load_config` returns a
configuration whose every value is one agentctl can use, or raises ConfigError (one line
naming the file); never anything else (issue 9, item 6)."""

from __future__ import annotations

import math
import os
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lib.config import SOURCE_KEYS, ConfigError, load_config
from lib.types import DRIVER_KINDS
from tests.support.cli import agentctl_env, run

FUZZ = settings(derandomize=True, max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# strings that matter to a loader: paths, URLs, DIDs, drivers, NUL, controls, '=' and unicode
texts = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.sampled_from(["", " ", "~", "~nouser/x", "/tmp", "rel/dir", "sqlite:///x.db", "sqlite:x.db",
                     "sqlite://host/x", "sqlite:///:memory:", "did:key:z6Mk", "did:", "true", "A=B",
                     "\0", "a\0b", "\x01", "\u202e", *DRIVER_KINDS, "stdio", "proxy", "gemini"]),
)
scalars = st.one_of(
    texts, st.integers(min_value=-(2**63), max_value=2**63 - 1), st.floats(allow_nan=True), st.booleans(),
    st.datetimes(), st.dates(), st.times(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=8,
)


def mostly(right, wrong=values, *, weight: int = 3):
    """`right` `weight` times in `weight` + 1, else `wrong`: deep enough to pass the
    first checks often, wrong often enough to test every one of them."""
    return st.sampled_from([right] * weight + [wrong]).flatmap(lambda chosen: chosen)


absent = st.none()
paths = st.sampled_from(["/tmp", "/nonexistent/dir", "~/x", "~nouser/x", "rel/dir", "", "/a\0b"])
RIGHT = {
    "driver": st.sampled_from([*DRIVER_KINDS, "gemini"]),
    "enabled": st.booleans(), "allowDangerFullAccess": st.booleans(),
    "command": st.lists(mostly(st.sampled_from(["codex", "app-server", "--acp"]), texts), max_size=3),
    "env": st.dictionaries(mostly(st.sampled_from(["A", "HTTPS_PROXY", "PATH"]), texts),
                           mostly(st.sampled_from(["1", "/bin", ""]), texts), max_size=3),
    "codexTransport": st.sampled_from(["stdio", "managed", "proxy", "tcp"]),
    "cwd": paths, "configDir": paths, "codexBin": paths, "codexHome": paths, "codexSocket": paths,
}
source_keys = st.lists(mostly(st.sampled_from(sorted(SOURCE_KEYS)), texts, weight=9), max_size=6, unique=True)
source_tables = source_keys.flatmap(lambda keys: st.fixed_dictionaries(
    {"driver": mostly(RIGHT["driver"], weight=9)} | {key: mostly(RIGHT.get(key, texts), weight=5) for key in keys}
))
source_ids = mostly(st.sampled_from(["codex", "Codex", " codex", "work", "claude"]), texts)
documents = st.builds(
    lambda store, space, sources, extra: {
        key: value for key, value in
        (("store", store), ("space", space), ("sources", sources), ("extra", extra)) if value is not None
    },
    store=mostly(absent, mostly(st.sampled_from(["sqlite:///tmp/f.db", "sqlite:~/f.db"]), st.one_of(texts, values))),
    space=mostly(absent, mostly(st.just("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"),
                                st.one_of(texts, values))),
    sources=mostly(st.dictionaries(source_ids, mostly(source_tables, weight=9), min_size=1, max_size=3), values,
                   weight=9),
    extra=mostly(absent, values, weight=9),
)


def toml_key(key: str) -> str:
    return toml_string(key)


def toml_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\' or ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_document(document: dict[str, Any]) -> str:
    return "".join(f"{toml_key(key)} = {toml_value(value)}\n" for key, value in document.items())


def assert_usable(config) -> None:
    """What the rest of agentctl relies on, true of every configuration that loads."""
    from lib.fabric.identity import is_did
    from lib.fabric.store_url import resolve_store_url

    if config.store is not None:
        assert resolve_store_url(config.store, None) == config.store  # absolute, parseable
    assert config.space is None or is_did(config.space)
    for source in config.sources:
        assert isinstance(source.enabled, bool) and isinstance(source.allow_danger_full_access, bool)
        assert source.driver in DRIVER_KINDS and source.id.strip()
        strings = [source.id, *(source.command or []), *source.env, *source.env.values()]
        strings += [v for v in (source.cwd, source.config_dir, source.codex_bin, source.codex_home,
                                source.codex_socket) if v is not None]
        assert all(isinstance(s, str) and "\0" not in s for s in strings)
        assert all(name and "=" not in name for name in source.env)


def load_or_refuse(path: Path) -> None:
    try:
        config = load_config(path)
    except ConfigError as exc:
        assert "\n" not in exc.message and str(path) in exc.message
        return
    assert_usable(config)


@FUZZ
@given(document=documents)
def test_any_document_loads_as_a_usable_configuration_or_raises_config_error(tmp_path, document):
    path = tmp_path / "config.toml"
    path.write_text(toml_document(document), encoding="utf-8")
    load_or_refuse(path)


@FUZZ
@given(document=documents, cut=st.integers(min_value=0), noise=st.binary(max_size=8))
def test_any_bytes_load_as_a_usable_configuration_or_raise_config_error(tmp_path, document, cut, noise):
    text = toml_document(document).encode("utf-8")
    at = cut % (len(text) + 1)
    path = tmp_path / "config.toml"
    path.write_bytes(text[:at] + noise + text[at:])
    load_or_refuse(path)


@pytest.mark.parametrize("text", [
    'space = ["did:key:z6Mk"]\n',
    'sources = [1, 2]\n',
    '[sources.codex]\ndriver = "codex-app-server"\nenabled = "yes"\n',
    '[sources.codex]\ndriver = "codex-app-server"\nenv = { "" = "x" }\n',
    "store = " + "{a = " * 2000 + "1" + "}" * 2000 + "\n",
])
def test_the_command_line_shows_a_bad_configuration_as_one_line(tmp_path, text):
    config = tmp_path / "config.toml"
    config.write_text(text)
    result = run(["sync", "codex"], agentctl_env(tmp_path / "state", config))
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"agentctl: {config}: ")
    assert not os.path.exists(tmp_path / "state")

from pathlib import Path

import pytest

from lib.config import ConfigError, check_unique_source_ids, load_config
from lib.drivers.base import DriverNotInstalled, DriverUnavailable
from lib.drivers.registry import DRIVER_CLASSES, create_driver
from lib.errors import ExitCode
from lib.types import AgentSourceConfig


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_no_file_gives_the_builtin_codex_and_claude_sources(tmp_path):
    config = load_config(environ={"XDG_CONFIG_HOME": str(tmp_path)})
    assert [(s.id, s.driver) for s in config.sources] == [("codex", "codex-app-server"), ("claude", "claude-agent-sdk")]
    assert config.path is None and not config.from_file


def test_config_path_comes_from_the_environment_override(tmp_path):
    path = write(tmp_path, '[sources.work]\ndriver = "acp"\ncommand = ["agent", "--acp"]\n')
    config = load_config(environ={"AGENTCTL_CONFIG": str(path)})
    assert config.path == path
    assert config.source("WORK").command == ["agent", "--acp"]


def test_an_explicit_config_path_that_does_not_exist_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(environ={"AGENTCTL_CONFIG": str(tmp_path / "missing.toml")})


def test_every_source_field_is_accepted_in_its_camelcase_spelling(tmp_path):
    path = write(tmp_path, """
store = "sqlite:///x.sqlite3"
[sources.codex]
driver = "codex-app-server"
enabled = false
command = ["codex", "app-server"]
cwd = "/work"
env = { A = "1" }
configDir = "/c"
codexBin = "/bin/codex"
codexHome = "~/codex-home"
codexTransport = "proxy"
codexSocket = "/tmp/s.sock"
allowDangerFullAccess = true
maxLineBytes = 1048576
stallTimeoutSeconds = 2.5
""")
    source = load_config(path).source("codex")
    assert source.enabled is False and source.env == {"A": "1"} and source.codex_transport == "proxy"
    assert source.codex_home == str(Path.home() / "codex-home")
    assert source.allow_danger_full_access is True and source.config_dir == "/c"
    assert (source.max_line_bytes, source.stall_timeout_seconds) == (1048576, 2.5)


def test_provider_fault_limits_default_to_a_quarter_gib_line_and_five_minutes_of_silence(tmp_path):
    source = load_config(write(tmp_path, '[sources.codex]\ndriver = "codex-app-server"\n')).source("codex")
    assert (source.max_line_bytes, source.stall_timeout_seconds) == (256 * 1024 * 1024, 300.0)
    assert load_config(write(tmp_path, '[sources.codex]\ndriver = "codex-app-server"\n'
                                       "stallTimeoutSeconds = 3\n")).source("codex").stall_timeout_seconds == 3.0


@pytest.mark.parametrize("setting", [
    "maxLineBytes = 1.5", 'maxLineBytes = "1048576"', "maxLineBytes = true", "maxLineBytes = 0",
    "maxLineBytes = 100", "stallTimeoutSeconds = 0", "stallTimeoutSeconds = -1",
    'stallTimeoutSeconds = "300"', "stallTimeoutSeconds = inf", "stallTimeoutSeconds = nan",
    "stallTimeoutSeconds = false",
])
def test_provider_fault_limits_are_validated_strictly_naming_the_setting_and_the_file(tmp_path, setting):
    path = write(tmp_path, f'[sources.codex]\ndriver = "codex-app-server"\n{setting}\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert setting.split(" ")[0] in str(info.value) and str(path) in str(info.value)


def test_an_unknown_source_key_names_the_key_and_the_file(tmp_path):
    path = write(tmp_path, '[sources.codex]\ndriver = "codex-app-server"\ncodexhome = "/x"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "'codexhome'" in str(info.value) and str(path) in str(info.value)


def test_an_unknown_top_level_key_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown key 'sorces'"):
        load_config(write(tmp_path, "[sorces.codex]\n"))


def test_a_bad_value_names_the_field(tmp_path):
    with pytest.raises(ConfigError, match="codexTransport"):
        load_config(write(tmp_path, '[sources.codex]\ndriver = "codex-app-server"\ncodexTransport = "tcp"\n'))


def test_invalid_toml_is_reported_with_the_file(tmp_path):
    path = write(tmp_path, "[sources\n")
    with pytest.raises(ConfigError, match="not valid TOML") as info:
        load_config(path)
    assert str(path) in str(info.value)


def test_source_ids_that_collide_after_trimming_and_lowercasing_are_rejected(tmp_path):
    path = write(tmp_path, '[sources.Codex]\ndriver = "codex-app-server"\n[sources." codex"]\ndriver = "acp"\ncommand=["a"]\n')
    with pytest.raises(ConfigError, match="same once trimmed"):
        load_config(path)
    with pytest.raises(ConfigError):
        check_unique_source_ids([AgentSourceConfig(id="A", driver="acp"), AgentSourceConfig(id="a ", driver="acp")])


def test_the_driver_descriptor_id_is_trimmed_and_lowercased():
    driver = create_driver(AgentSourceConfig(id="  Codex-Work ", driver="codex-app-server"))
    assert driver.source.id == "codex-work"
    assert driver.source.driver == "codex-app-server"


@pytest.fixture
def acp_not_built(monkeypatch):
    """Every driver is built now: the acp driver's module made missing, as in a version
    of agentctl without it."""
    monkeypatch.setitem(DRIVER_CLASSES, "acp", ("lib.drivers.acp_not_built", "AcpDriver"))


def test_a_driver_that_is_not_built_is_reported_as_unavailable_not_as_an_import_error(acp_not_built):
    with pytest.raises(DriverUnavailable) as info:
        create_driver(AgentSourceConfig(id="work", driver="acp", command=["my-agent"]))
    assert info.value.code == "driver-not-available"


def test_a_driver_agentctl_does_not_have_is_a_usage_error_and_a_missing_program_a_failure(acp_not_built):
    with pytest.raises(DriverNotInstalled) as not_built:
        create_driver(AgentSourceConfig(id="Work", driver="acp", command=["my-agent"]))
    # the configuration's types refuse an unknown driver; a host's own config may not
    with pytest.raises(DriverNotInstalled) as unknown:
        create_driver(AgentSourceConfig.model_construct(id="x", driver="gemini"))
    assert unknown.value.code == "unknown-driver" and "'gemini'" in unknown.value.message
    assert not_built.value.exit_code == unknown.value.exit_code == ExitCode.USAGE
    assert "source work" in not_built.value.message and "acp" in not_built.value.message
    missing = DriverUnavailable("program-not-found", "no codex")
    assert missing.exit_code == ExitCode.FAILURE
    told = missing.reworded("source codex cannot start: no codex")
    assert type(told) is DriverUnavailable and told.code == "program-not-found"
    assert (told.message, str(told), told.exit_code) == ("source codex cannot start: no codex",) * 2 + (1,)


def test_source_ids_are_trimmed_with_javascripts_whitespace_set_like_session_keys():
    from lib.session_key import session_key
    from lib.types import normalize_source_id

    assert normalize_source_id("\ufeffCodex\u3000") == "codex"
    assert normalize_source_id("\x1ccodex") == "\x1ccodex"  # not whitespace to JavaScript
    assert session_key(" Codex\ufeff", "a").split("/")[0] == normalize_source_id(" Codex\ufeff")


def test_checkout_roots_are_expanded_absolute_paths_kept_once(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = write(tmp_path, 'checkoutRoots = ["~/src", "/work", "/work/", "~/src"]\n')
    config = load_config(path)
    assert config.checkout_roots == (tmp_path / "home" / "src", Path("/work"))


def test_without_checkout_roots_there_is_no_discovery(tmp_path):
    assert load_config(write(tmp_path, "")).checkout_roots == ()
    assert load_config(environ={"XDG_CONFIG_HOME": str(tmp_path / "none")}).checkout_roots == ()


@pytest.mark.parametrize(("text", "message"), [
    ('checkoutRoots = "/work"', r"'checkoutRoots' must be an array of directory paths \(got a string\)"),
    ("checkoutRoots = [1]", r"'checkoutRoots'\[0\] must be a string \(got an integer\)"),
    ('checkoutRoots = ["/a", ""]', r"'checkoutRoots'\[1\] is empty"),
    ('checkoutRoots = ["  "]', r"'checkoutRoots'\[0\] is empty"),
    ('checkoutRoots = ["src"]', r"'checkoutRoots'\[0\] 'src' is not an absolute path"),
    ('checkoutRoots = ["~nosuchuser-agentctl/src"]', r"is not an absolute path"),
])
def test_a_bad_checkout_root_is_one_config_error(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(write(tmp_path, text + "\n"))
    assert caught.value.exit_code == ExitCode.USAGE
    assert str(tmp_path / "config.toml") in caught.value.message


def test_a_source_id_with_a_newline_is_shown_escaped_in_a_one_line_message(tmp_path):
    """Found by the configuration fuzz test: the id went into the message as it was."""
    path = write(tmp_path, '[sources."a\\nb"]\ndriver = "gemini"\n')
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert "\n" not in raised.value.message and "[sources.'a\\nb']: driver" in raised.value.message

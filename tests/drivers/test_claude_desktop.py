"""Desktop starts and their pairing, over the real pinned SDK's session functions: the
link goes to an injected opener (the Claude app is not on this machine), and the app's
sessions are fixture sessions written after the start's boundary."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from lib.drivers.base import DriverError
from lib.drivers.claude_agent_sdk import ClaudeAgentSdkDriver
from lib.drivers.claude_desktop import first_prompt_form, open_with_desktop
from lib.pipeline.collected import publish_collected
from lib.reconcile import collect_source
from lib.types import AgentSourceConfig, CommandExecutionOptions, StartInput
from tests.fabric.target_helpers import make_env
from tests.support.claude_home import (
    FixtureSession,
    FixtureTurn,
    make_config_dir,
    session_id,
    write_session,
)

PROMPT = "Tidy the changelog\nand tag the release"
EARLY = datetime(2026, 1, 1, tzinfo=UTC)


@dataclasses.dataclass
class Desktop:
    config_dir: Path
    work: Path
    other: Path
    links: list[str]
    fail_with: Exception | None = None

    def open(self, link: str) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        self.links.append(link)

    def driver(self, **fields) -> ClaudeAgentSdkDriver:
        fields.setdefault("cwd", str(self.work))
        config = AgentSourceConfig(id="claude", driver="claude-agent-sdk", config_dir=str(self.config_dir), **fields)
        driver = ClaudeAgentSdkDriver(config, desktop_opener=self.open)
        driver.start()
        return driver

    def app_session(self, name: str, *, prompt: str = PROMPT, cwd: Path | None = None,
                    created: datetime | None = None) -> str:
        """A session as the app writes it once the person sends the prompt."""
        created = created or datetime.now(UTC) + timedelta(seconds=1)
        fixture = FixtureSession(id=session_id(f"desktop-{name}-{uuid.uuid4()}"), cwd=str(cwd or self.work),
                                 turns=(FixtureTurn(prompt, "On it."),), created_at=created, updated_at=created,
                                 branch=None)
        write_session(self.config_dir, fixture)
        return fixture.id


@pytest.fixture
def desktop(tmp_path) -> Desktop:
    work, other = tmp_path / "work", tmp_path / "other"
    work.mkdir()
    other.mkdir()
    return Desktop(make_config_dir(tmp_path / "claude-config", []), work, other, [])


def started_as(driver) -> dict[str, str | None]:
    return {s.native_session_id: s.started_as for s in driver.list_sessions().sessions}


def test_a_desktop_start_opens_the_new_code_session_link_and_calls_no_milestone(desktop):
    driver = desktop.driver()
    caller = str(uuid.uuid4())
    milestones = []
    result = driver.start_session(caller, StartInput(text=PROMPT), CommandExecutionOptions(
        on_cancellation_ready=lambda: milestones.append("cancellation-ready"),
        on_session_active=lambda: milestones.append("session-active")))
    assert result.status == "succeeded", result
    assert milestones == []
    assert result.result == {"affectedSession": None, "nativeSessionId": caller, "cwd": str(desktop.work),
                             "desktop": True}
    [link] = desktop.links
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("claude", "code", "/new")
    assert parse_qs(parts.query) == {"q": [PROMPT], "folder": [str(desktop.work)]}
    driver.stop()


def test_a_desktop_start_takes_no_mode(desktop):
    driver = desktop.driver()
    result = driver.start_session(str(uuid.uuid4()), StartInput(text=PROMPT, mode="plan"))
    assert (result.status, result.error.code) == ("unsupported", "unsupported-mode")
    assert desktop.links == []
    driver.stop()


def test_a_desktop_start_follows_the_start_directory_rules(desktop):
    driver = desktop.driver()
    result = driver.start_session(str(uuid.uuid4()), StartInput(text=PROMPT, cwd=str(desktop.other)))
    assert (result.status, result.error.code) == ("failed", "wrong-directory")
    bad_id = driver.start_session("not-a-uuid", StartInput(text=PROMPT))
    assert (bad_id.status, bad_id.error.code) == ("failed", "invalid-session-id")
    assert desktop.links == []
    driver.stop()


def test_the_apps_session_is_paired_by_snapshot_boundary_directory_and_prompt(desktop):
    already = desktop.app_session("in-snapshot", created=datetime.now(UTC) + timedelta(hours=1))
    driver = desktop.driver(cwd=None)
    caller = str(uuid.uuid4())
    assert driver.start_session(caller, StartInput(text=PROMPT, cwd=str(desktop.work))).status == "succeeded"
    before = desktop.app_session("before-boundary", created=EARLY)
    elsewhere = desktop.app_session("elsewhere", cwd=desktop.other)
    other_prompt = desktop.app_session("other-prompt", prompt="Something else")
    made = desktop.app_session("made-by-the-app")
    listed = started_as(driver)
    assert listed == {already: None, before: None, elsewhere: None, other_prompt: None, made: caller}
    assert driver.read_session(made).summary.started_as == caller
    assert started_as(driver)[made] == caller  # kept once paired
    driver.stop()


def test_one_desktop_start_pairs_one_session(desktop):
    driver = desktop.driver()
    caller = str(uuid.uuid4())
    driver.start_session(caller, StartInput(text=PROMPT))
    first = desktop.app_session("first", created=datetime.now(UTC) + timedelta(seconds=1))
    second = desktop.app_session("second", created=datetime.now(UTC) + timedelta(seconds=2))
    listed = started_as(driver)
    assert sorted(listed[s] or "" for s in (first, second)) == ["", caller]
    driver.stop()


def test_a_long_prompt_pairs_by_the_sdks_shortened_first_prompt(desktop):
    long_prompt = "Refactor the parser " * 30
    assert first_prompt_form(long_prompt).endswith("\u2026")
    driver = desktop.driver()
    caller = str(uuid.uuid4())
    driver.start_session(caller, StartInput(text=long_prompt))
    made = desktop.app_session("long", prompt=long_prompt)
    assert started_as(driver)[made] == caller
    driver.stop()


def test_a_failing_opener_fails_the_start_and_nothing_is_paired(desktop):
    desktop.fail_with = DriverError("opener-failed", "no desktop here")
    driver = desktop.driver()
    result = driver.start_session(str(uuid.uuid4()), StartInput(text=PROMPT))
    assert (result.status, result.error.code) == ("failed", "opener-failed")
    made = desktop.app_session("after-failure")
    assert started_as(driver)[made] is None
    driver.stop()


def test_the_default_opener_without_a_desktop_handler_fails_with_opener_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no open / xdg-open to run
    with pytest.raises(DriverError) as failure:
        open_with_desktop("claude://code/new?q=x")
    assert failure.value.code == "opener-failed"


def test_the_pairing_is_published_as_started_as(desktop, tmp_path):
    driver = desktop.driver()
    caller = str(uuid.uuid4())
    driver.start_session(caller, StartInput(text=PROMPT))
    made = desktop.app_session("published")
    target = make_env(tmp_path / "store").target()
    collected = collect_source(driver)
    assert collected.complete
    publish_collected(target, [collected], observation_sequence=target.begin_session_observation())
    assert target.published_sessions()[f"claude/{made}"].started_as == caller
    driver.stop()


"""Where the ACP driver keeps learned controls between runs (lib/drivers/acp_controls_book.py):
private files one per session, no link ever followed, damaged files counted as absent;
and a driver given a state directory knows what an earlier driver learned from its start,
over the project's test agent as a real child."""

from __future__ import annotations

import json
import os
import stat

import pytest

from lib.drivers.acp_controls_book import DIRECTORY, ControlsBook, UnsafeControlsDirectory, digest
from tests.support.acp_drivers import agent_world

WIRE = {"modes": ["ask", "code"], "currentMode": "ask",
        "options": {"model": {"id": "model", "type": "select", "options": []}}}


@pytest.fixture
def agents(tmp_path):
    yield from agent_world(tmp_path)


@pytest.fixture
def state(tmp_path):
    path = tmp_path / "state"
    path.mkdir(mode=0o700)
    return path


def book_of(state, source_id="acp") -> ControlsBook:
    book = ControlsBook.open(state, source_id)
    assert book is not None
    return book


def test_a_saved_session_is_a_private_file_in_private_directories_and_loads_back(state):
    book = book_of(state)
    book.save("seed-001", WIRE)
    [path] = book.path.iterdir()
    assert path.name == f"{digest('seed-001')}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(book.path.stat().st_mode) == 0o700
    assert stat.S_IMODE(book.path.parent.stat().st_mode) == 0o700
    book.close()
    again = book_of(state)
    assert again.load_all() == {"seed-001": {**WIRE, "format": 1, "sessionId": "seed-001"}}
    assert again.load("seed-001")["modes"] == ["ask", "code"]
    again.forget("seed-001")
    assert again.load_all() == {} and list(again.path.iterdir()) == []
    again.close()


def test_a_loose_directory_of_ours_is_tightened(state):
    (state / DIRECTORY).mkdir(mode=0o755)
    os.chmod(state / DIRECTORY, 0o755)
    book_of(state).close()
    assert stat.S_IMODE((state / DIRECTORY).stat().st_mode) == 0o700


@pytest.mark.parametrize("planted", ["link", "file"])
def test_a_planted_directory_refuses_the_book_and_nothing_is_written_through_it(state, tmp_path, planted):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if planted == "link":
        (state / DIRECTORY).symlink_to(elsewhere)
    else:
        (state / DIRECTORY).write_text("not a directory")
    with pytest.raises(UnsafeControlsDirectory) as info:
        ControlsBook.open(state, "acp")
    assert info.value.code == "unsafe-state-directory"
    assert str(state / DIRECTORY) in info.value.message
    assert list(elsewhere.iterdir()) == []


def test_a_planted_link_in_place_of_a_session_file_is_never_followed(state, tmp_path):
    book = book_of(state)
    target = tmp_path / "target.json"
    target.write_text(json.dumps({**WIRE, "format": 1, "sessionId": "seed-001"}))
    (book.path / f"{digest('seed-001')}.json").symlink_to(target)
    assert book.load("seed-001") is None and book.load_all() == {}  # read through: no
    book.save("seed-001", {**WIRE, "modes": ["plan"]})
    assert json.loads(target.read_text())["modes"] == ["ask", "code"]  # written through: no
    assert not (book.path / f"{digest('seed-001')}.json").is_symlink()
    assert book.load("seed-001")["modes"] == ["plan"]
    book.close()


def test_damaged_or_foreign_files_count_as_absent(state):
    book = book_of(state)
    (book.path / f"{digest('a')}.json").write_text("{not json")
    (book.path / f"{digest('b')}.json").write_text(json.dumps({"format": 99, "sessionId": "b"}))
    (book.path / f"{digest('c')}.json").write_text(json.dumps({**WIRE, "format": 1, "sessionId": "other"}))
    (book.path / "stray.json").write_text(json.dumps({**WIRE, "format": 1, "sessionId": "d"}))
    assert book.load("a") is None and book.load("b") is None and book.load("c") is None
    assert book.load_all() == {}
    book.close()


def test_a_closed_book_writes_nothing(state):
    book = book_of(state)
    book.close()
    book.save("seed-001", WIRE)
    assert list(book.path.iterdir()) == []


def test_a_driver_with_a_state_directory_knows_what_an_earlier_driver_learned_from_its_start(agents, state):
    first = agents.driver("--seed", "3", start=False)
    first.state_directory = lambda: state
    first.start()
    first.read_session("seed-001")
    assert first.source.capabilities.modes == ["ask", "code", "plan"]
    first.stop()

    later = agents.driver(start=False)
    later.state_directory = lambda: state
    later.start()
    assert later.source.capabilities.modes == ["ask", "code", "plan"]  # before any call
    assert sorted(later.source.capabilities.config_options) == ["mode", "model", "profile", "verbose"]
    assert later.controls.known("seed-001")


def test_a_planted_controls_directory_refuses_the_start_before_the_agent_runs(agents, state, tmp_path):
    (state / DIRECTORY).symlink_to(tmp_path)
    driver = agents.driver("--seed", "1", start=False)
    driver.state_directory = lambda: state
    with pytest.raises(UnsafeControlsDirectory):
        driver.start()
    assert not (agents.home / "initialize.json").exists()


def test_a_complete_inventory_adopts_what_another_process_learned_since_this_one_started(agents, state):
    running = agents.driver("--seed", "3", start=False)
    running.state_directory = lambda: state
    running.start()  # nothing kept yet
    assert running.source.capabilities.modes == []
    other = agents.driver(start=False)
    other.state_directory = lambda: state
    other.start()
    other.read_session("seed-002")  # kept by the other driver
    cursor = None
    while True:
        page = running.list_sessions(cursor)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert running.source.capabilities.modes == ["ask", "code", "plan"]
    assert running.controls.known("seed-002") and not running.controls.known("seed-001")

"""The environment switch (lib/drivers/environment_switch.py) the Claude adapter sets
`CLAUDE_CONFIG_DIR` with for each SDK session call: the call sees the value, in
`os.environ` and in the C environment a child process inherits; what was there before
comes back, also when the call raises; and switches of different values never overlap.
"""

from __future__ import annotations

import os
import subprocess
import threading

import pytest

from lib.drivers.environment_switch import VariableSwitch, with_environment

NAME = "AGENTCTL_TEST_SWITCHED"


def _seen() -> tuple[str | None, str]:
    """The variable as `os.environ` and as a child process see it."""
    child = subprocess.run(["sh", "-c", f'printf %s "${{{NAME}-unset}}"'], capture_output=True, text=True, check=True)
    return os.environ.get(NAME), child.stdout


@pytest.mark.parametrize("held", [None, "before", "switched"])
def test_a_switched_call_sees_the_value_and_the_variable_is_as_it_was_afterwards(monkeypatch, held):
    if held is None:
        monkeypatch.delenv(NAME, raising=False)
    else:
        monkeypatch.setenv(NAME, held)
    after = (held, held if held is not None else "unset")
    assert VariableSwitch(NAME, "switched").call(_seen) == ("switched", "switched")
    assert _seen() == after
    assert with_environment(NAME, "switched", _seen) == ("switched", "switched")
    assert _seen() == after


@pytest.mark.parametrize("held", [None, "before"])
def test_the_variable_comes_back_when_the_call_raises(monkeypatch, held):
    if held is None:
        monkeypatch.delenv(NAME, raising=False)
    else:
        monkeypatch.setenv(NAME, held)

    def fails() -> None:
        assert os.environ[NAME] == "switched"
        raise RuntimeError("the SDK failed")

    for switched in (VariableSwitch(NAME, "switched").call, lambda f: with_environment(NAME, "switched", f)):
        with pytest.raises(RuntimeError, match="the SDK failed"):
            switched(fails)
        assert _seen() == (held, held if held is not None else "unset")


def test_no_value_leaves_the_environment_alone(monkeypatch):
    monkeypatch.setenv(NAME, "mine")
    assert with_environment(NAME, None, lambda: os.environ[NAME]) == "mine"
    assert os.environ[NAME] == "mine"


def test_switches_of_two_values_on_two_threads_never_see_each_others_value(monkeypatch):
    monkeypatch.delenv(NAME, raising=False)
    wrong: list[str | None] = []
    start = threading.Barrier(2)

    def switching(value: str) -> None:
        switch = VariableSwitch(NAME, value)
        start.wait()
        for _ in range(2000):
            seen = switch.call(os.environ.get, NAME)
            if seen != value:
                wrong.append(seen)

    threads = [threading.Thread(target=switching, args=(value,)) for value in ("left", "right")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads) and wrong == []
    assert NAME not in os.environ

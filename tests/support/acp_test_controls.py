"""What an ACP test-agent session lets a client change: its modes and its configuration
options (a select, a select whose values come in groups, and a boolean).

Every session advertises the modes ask, code and plan and every option, unless its
file names its own: `modes` (mode ids; a name and description are made up for ids not
in MODES) and `optionIds` (the options to carry). Tests edit those to change what a
later answer says.
"""

from __future__ import annotations

from typing import Any

from acp.schema import (
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectGroup,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

MODES = [
    ("ask", "Ask", "Answer questions, change nothing"),
    ("code", "Code", "Edit files"),
    ("plan", "Plan", "Plan before acting"),
]
MODELS = [("fast", "Fast model"), ("smart", "Smart model")]
# A select option whose values come in groups (the schema's SessionConfigSelectGroup).
PROFILES = {"remote": [("gpt-a", "GPT A"), ("gpt-b", "GPT B")], "local": [("llama", "Llama")]}


def session_modes(rec: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The modes this session advertises: its own `modes` ids when it names them."""
    known = {i: (i, n, d) for i, n, d in MODES}
    ids = rec.get("modes")
    if not isinstance(ids, list):
        return list(MODES)
    return [known.get(i, (i, i.title(), f"The {i} mode")) for i in ids]


def mode_state(rec: dict[str, Any]) -> SessionModeState:
    return SessionModeState(
        current_mode_id=rec["mode"],
        available_modes=[SessionMode(id=i, name=n, description=d) for i, n, d in session_modes(rec)],
    )


def config_options(rec: dict[str, Any], boolean_options: bool) -> list[Any]:
    """The options a session carries; the boolean one only for a client that takes
    booleans (boolean_options)."""
    opts: list[Any] = [
        SessionConfigOptionSelect(
            type="select",
            id="mode",
            name="Mode",
            category="mode",
            current_value=rec["mode"],
            options=[SessionConfigSelectOption(value=i, name=n) for i, n, _ in session_modes(rec)],
        ),
        SessionConfigOptionSelect(
            type="select",
            id="model",
            name="Model",
            category="model",
            current_value=rec["config"]["model"],
            options=[SessionConfigSelectOption(value=v, name=n) for v, n in MODELS],
        ),
        SessionConfigOptionSelect(
            type="select",
            id="profile",
            name="Profile",
            current_value=rec["config"].get("profile", "gpt-a"),
            options=[
                SessionConfigSelectGroup(group=g, name=g.title(),
                                         options=[SessionConfigSelectOption(value=v, name=n) for v, n in values])
                for g, values in PROFILES.items()
            ],
        ),
    ]
    # Spec: boolean options only for clients that advertised
    # clientCapabilities.session.configOptions.boolean.
    if boolean_options:
        opts.append(
            SessionConfigOptionBoolean(
                type="boolean",
                id="verbose",
                name="Verbose output",
                current_value=bool(rec["config"].get("verbose", False)),
            )
        )
    wanted = rec.get("optionIds")
    return opts if not isinstance(wanted, list) else [o for o in opts if o.id in wanted]

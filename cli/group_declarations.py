"""What the `agentctl` group is, without click: its help text, its context settings and
its global options, declared once as plain data. cli/group.py and cli/options.py build
the click group and options from these; cli/group_help.py renders `agentctl --help`
from the same declarations without importing click (tests/test_startup_group_help.py
checks the two agree at every width, and that nothing is added to one alone)."""

from __future__ import annotations

GROUP_HELP = """Collect coding-agent sessions into a Fabric store and drive the agents from it.

Subcommands pipe JSON lines to each other:

\b
    agentctl list codex | agentctl read | agentctl prepare | agentctl publish

The global options go before or after the subcommand (agentctl sync -q)."""

HELP_OPTION_NAMES = ("-h", "--help")
MAX_CONTENT_WIDTH = 100
GROUP_CONTEXT_SETTINGS = {"help_option_names": list(HELP_OPTION_NAMES), "max_content_width": MAX_CONTENT_WIDTH}
SUBCOMMAND_METAVAR = "COMMAND [ARGS]..."  # click's for a group
OPTIONS_METAVAR = "[OPTIONS]"
VERSION_HELP = "Show the version and exit."
HELP_HELP = "Show this message and exit."  # click's own for its help option

# What each kind of value is called in the help (click's metavar for its type); "count"
# and "flag" take no value.
VALUE_METAVARS = {"file": "FILE", "directory": "DIRECTORY", "text": "TEXT", "did": "DID"}

# The global options in their order: (spellings and parameter name, environment
# variable, kind of value, help). The names are the Workspace's arguments (or the
# people options'); cli/options.py makes each a click.Option.
WORKSPACE_OPTION_DECLARATIONS: tuple[tuple[tuple[str, ...], str | None, str, str], ...] = (
    (("--config", "config_path"), "AGENTCTL_CONFIG", "file",
     "Configuration file (default ~/.config/agentctl/config.toml)."),
    (("--store", "store_url"), "AGENTCTL_STORE", "text",
     "Store URL (default sqlite:///<state dir>/fabric.sqlite3)."),
    (("--space", "space"), "AGENTCTL_SPACE", "did",
     "Space DID to publish into (default: your identity's DID)."),
    (("--identity", "identity_path"), "AGENTCTL_IDENTITY", "file",
     "Ed25519 identity key file (default <state dir>/identity.json)."),
    (("--state-dir", "state_dir"), "AGENTCTL_STATE_DIR", "directory",
     "State directory (default ~/.local/state/agentctl)."),
)
PEOPLE_OPTION_DECLARATIONS: tuple[tuple[tuple[str, ...], str | None, str, str], ...] = (
    (("-v", "--verbose", "verbose"), None, "count", "More detail; tracebacks on errors."),
    (("-q", "--quiet", "quiet"), None, "flag", "No progress bars or messages."),
)
GLOBAL_OPTION_DECLARATIONS = WORKSPACE_OPTION_DECLARATIONS + PEOPLE_OPTION_DECLARATIONS

"""One module per subcommand, imported only when that subcommand runs (or its --help is
asked): COMMAND_TABLE names each one, where it is defined, and its short help, which is
all `agentctl --help` needs. tests/test_startup_commands.py checks the table against the
real commands, so it cannot drift from them.

`COMMANDS` (every command, loaded) is still here for code that wants them all; asking for
it imports every command module.
"""

from __future__ import annotations


class CommandEntry:
    """A subcommand before its module is imported: `module`.`attribute` is the click
    command; `short_help` is what `cmd.get_short_help_str()` gives for it, untruncated.
    A plain immutable class, not a dataclass: `agentctl --help` reads the table, and
    `dataclasses` (with `inspect` under it) costs more than the rest of that path."""

    __slots__ = ("name", "module", "attribute", "short_help")

    def __init__(self, name: str, module: str, attribute: str, short_help: str) -> None:
        for slot, value in zip(self.__slots__, (name, module, attribute, short_help), strict=True):
            object.__setattr__(self, slot, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a CommandEntry is immutable (cannot set {name!r})")

    def _fields(self) -> tuple[str, str, str, str]:
        return (self.name, self.module, self.attribute, self.short_help)

    def __eq__(self, other: object) -> bool:
        return self._fields() == other._fields() if isinstance(other, CommandEntry) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "CommandEntry(name={!r}, module={!r}, attribute={!r}, short_help={!r})".format(*self._fields())

    def load(self) -> object:
        # __import__, not importlib.import_module: `python -X importtime` reports only the
        # former, and the start-up tests and profiles read that report
        return getattr(__import__(self.module, fromlist=[self.attribute]), self.attribute)


COMMAND_TABLE: tuple[CommandEntry, ...] = (
    CommandEntry("list", "cli.commands.list", "list_command", "List the sessions of SOURCE."),
    CommandEntry("read", "cli.commands.read", "read_command",
                 "Read whole sessions: `summary` records on stdin, or SESSION_IDS of --source."),
    CommandEntry("prepare", "cli.commands.prepare", "prepare_command",
                 "Prepare sessions for publication: stable key, event chunks, content hashes."),
    CommandEntry("publish", "cli.commands.publish", "publish_command",
                 "Publish sessions into the Fabric space (--store, --space)."),
    CommandEntry("sync", "cli.commands.sync", "sync_command",
                 "Collect SOURCES (default: every enabled source) and publish them."),
    CommandEntry("sessions", "cli.commands.sessions", "sessions_command",
                 "Show the sessions published in the space, newest first."),
    CommandEntry("show", "cli.commands.show", "show_command",
                 "Show the published session KEY (as `agentctl sessions` lists it)."),
    CommandEntry("command", "cli.commands.command", "command_group",
                 "Send commands to agent sessions, and carry them out."),
    CommandEntry("receipts", "cli.commands.receipts", "receipts_command",
                 "Show the latest command receipts in the space, newest first."),
    CommandEntry("recover", "cli.commands.recover", "recover_command",
                 "Publish the receipts an executor left unpublished."),
    CommandEntry("init", "cli.commands.init", "init_command",
                 "Set agentctl up on this machine: your identity and a configuration file."),
    CommandEntry("serve", "cli.commands.serve", "serve_command",
                 "Keep every session published and carry out commands, until stopped."),
    CommandEntry("health", "cli.commands.health", "health_command",
                 "Show the health the host (`agentctl serve`) published, and whether it runs."),
    CommandEntry("store", "cli.commands.store", "store_group", "Work on stores as a whole."),
)


def __getattr__(name: str) -> object:
    if name == "COMMANDS":  # every command, loaded: imports every command module
        return [entry.load() for entry in COMMAND_TABLE]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

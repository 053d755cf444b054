"""One module per subcommand; COMMANDS is what `cli.main` registers."""

from cli.commands.list import list_command
from cli.commands.prepare import prepare_command
from cli.commands.read import read_command

COMMANDS = [list_command, read_command, prepare_command]

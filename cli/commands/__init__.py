"""One module per subcommand; COMMANDS is what `cli.main` registers."""

from cli.commands.command import command_group
from cli.commands.health import health_command
from cli.commands.init import init_command
from cli.commands.list import list_command
from cli.commands.prepare import prepare_command
from cli.commands.publish import publish_command
from cli.commands.read import read_command
from cli.commands.receipts import receipts_command
from cli.commands.recover import recover_command
from cli.commands.serve import serve_command
from cli.commands.sessions import sessions_command
from cli.commands.show import show_command
from cli.commands.store import store_group
from cli.commands.sync import sync_command

COMMANDS = [list_command, read_command, prepare_command, publish_command, sync_command, sessions_command, show_command,
            command_group, receipts_command, recover_command, init_command, serve_command, health_command,
            store_group]

"""`agentctl --help` (and `-h`) without importing click: the group's help rendered from
its declarations (cli/group_declarations.py) and the command table, the way click's
HelpFormatter renders it (click 8.5: the description wrapped, the option and command
lists aligned, each command's short help shortened to fit), byte for byte at every
terminal width. tests/test_startup_group_help.py compares the two over many widths.

Only a bare `agentctl --help` or `agentctl -h` comes here; anything else is click's."""

from __future__ import annotations

import os
import sys
import textwrap

from cli.commands import COMMAND_TABLE
from cli.group_declarations import (
    GLOBAL_OPTION_DECLARATIONS,
    GROUP_HELP,
    HELP_HELP,
    HELP_OPTION_NAMES,
    MAX_CONTENT_WIDTH,
    OPTIONS_METAVAR,
    SUBCOMMAND_METAVAR,
    VALUE_METAVARS,
    VERSION_HELP,
)

INDENT = 2  # click's indent_increment
USAGE_PREFIX = "Usage: "


def program_name() -> str | None:
    """The name click shows for this program (its `_detect_program_name`), or None when
    it is not a plain file name that click would show as is (then click renders)."""
    main = sys.modules.get("__main__")
    if getattr(main, "__package__", None) not in (None, "") or not sys.argv or not sys.argv[0]:
        return None  # `python -m ...`: click names it its own way
    name = os.path.basename(sys.argv[0])
    return name if name.isascii() and name.isprintable() and name.strip() == name and name else None


def help_width() -> int:
    """click's HelpFormatter width: the terminal's columns (shutil.get_terminal_size's
    answer, without importing shutil), at most MAX_CONTENT_WIDTH, minus 2, at least 50."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80
    return max(min(columns, MAX_CONTENT_WIDTH) - 2, 50)


class _Wrapper(textwrap.TextWrapper):
    """click's TextWrapper for text without ANSI escapes: a word longer than the line is
    cut at the line's end (never at a hyphen), at least one character per line."""

    def _handle_long_word(self, reversed_chunks: list[str], cur_line: list[str], cur_len: int, width: int) -> None:
        space_left = max(width - cur_len, 1)
        if self.break_long_words:
            last = reversed_chunks[-1]
            cur_line.append(last[:space_left])
            reversed_chunks[-1] = last[space_left:]
        elif not cur_line:
            cur_line.append(reversed_chunks.pop())


def wrap_text(text: str, width: int, initial_indent: str = "", subsequent_indent: str = "",
              preserve_paragraphs: bool = False) -> str:
    """click.formatting.wrap_text."""
    text = text.expandtabs()
    wrapper = _Wrapper(width, initial_indent=initial_indent, subsequent_indent=subsequent_indent,
                       replace_whitespace=False)
    if not preserve_paragraphs:
        return wrapper.fill(text)
    paragraphs: list[tuple[int, bool, str]] = []
    buf: list[str] = []
    indent: int | None = None

    def flush() -> None:
        if not buf:
            return
        if buf[0].strip() == "\b":
            paragraphs.append((indent or 0, True, "\n".join(buf[1:])))
        else:
            paragraphs.append((indent or 0, False, " ".join(buf)))
        del buf[:]

    for line in text.splitlines():
        if not line:
            flush()
            indent = None
        else:
            if indent is None:
                stripped = line.lstrip()
                indent = len(line) - len(stripped)
                line = stripped
            buf.append(line)
    flush()
    out = []
    for extra, raw, paragraph in paragraphs:
        wrapper.initial_indent = initial_indent + " " * extra
        wrapper.subsequent_indent = subsequent_indent + " " * extra
        if raw:
            out.append("\n".join(
                f"{wrapper.initial_indent if i == 0 else wrapper.subsequent_indent}{line}"
                for i, line in enumerate(paragraph.splitlines())))
        else:
            out.append(wrapper.fill(paragraph))
    return "\n\n".join(out)


def short_help(text: str, limit: int) -> str:
    """click's short help of a command whose help is `text` (make_default_short_help)."""
    words = text.partition("\n\n")[0].split()
    if words and words[0] == "\b":
        words = words[1:]
    if not words:
        return ""
    last = len(words) - 1
    for i, word in enumerate(words):
        if word.endswith(".") and (i == last or not words[i + 1][0].islower()):
            words = words[: i + 1]
            break
    joined = " ".join(words)
    if len(joined) <= limit:
        return joined.strip()
    if limit < 3:
        return "..."
    return textwrap.shorten(joined, limit, placeholder="...", break_on_hyphens=False).strip()


def write_dl(out: list[str], rows: list[tuple[str, str]], width: int, indent: int) -> None:
    """click's HelpFormatter.write_dl (col_max 30, col_spacing 2)."""
    first_col = min(max(len(first) for first, _ in rows), 30) + 2
    for first, second in rows:
        out.append(f"{'':>{indent}}{first}")
        if not second:
            out.append("\n")
            continue
        if len(first) <= first_col - 2:
            out.append(" " * (first_col - len(first)))
        else:
            out.append("\n")
            out.append(" " * (first_col + indent))
        lines = wrap_text(second, max(width - first_col - 2, 10), preserve_paragraphs=True).splitlines()
        if lines:
            out.append(f"{lines[0]}\n")
            out.extend(f"{'':>{first_col + indent}}{line}\n" for line in lines[1:])
        else:
            out.append("\n")


def option_rows() -> list[tuple[str, str]]:
    """The Options section: the global options, --version, the help option."""
    rows = []
    for decls, _envvar, kind, help in GLOBAL_OPTION_DECLARATIONS:
        spellings = sorted((d for d in decls if d.startswith("-")), key=lambda d: 2 if d[1:2] == d[0] else 1)
        spec = ", ".join(spellings)
        if kind in VALUE_METAVARS:
            spec += f" {VALUE_METAVARS[kind]}"
        rows.append((spec, help))
    rows.append(("--version", VERSION_HELP))
    rows.append((", ".join(HELP_OPTION_NAMES), HELP_HELP))
    return rows


def render(prog: str, width: int) -> str:
    """The group's help as click's `ctx.get_help()` returns it (no final newline)."""
    out: list[str] = []
    usage = f"{USAGE_PREFIX}{prog} "
    args = f"{OPTIONS_METAVAR} {SUBCOMMAND_METAVAR}"
    if width >= len(usage) + 20:
        out.append(wrap_text(args, width, initial_indent=usage, subsequent_indent=" " * len(usage)))
    else:
        out.append(usage)
        out.append("\n")
        indent = " " * (len(USAGE_PREFIX) + 4)
        out.append(wrap_text(args, width, initial_indent=indent, subsequent_indent=indent))
    out.append("\n")
    out.append("\n")  # the description's paragraph
    out.append(wrap_text(GROUP_HELP, width, initial_indent=" " * INDENT, subsequent_indent=" " * INDENT,
                         preserve_paragraphs=True))
    out.append("\n")
    out.append("\nOptions:\n")
    write_dl(out, option_rows(), width, INDENT)
    names = sorted(entry.name for entry in COMMAND_TABLE)
    if names:
        limit = width - 6 - max(len(name) for name in names)
        helps = {entry.name: entry.short_help for entry in COMMAND_TABLE}
        out.append("\nCommands:\n")
        write_dl(out, [(name, short_help(helps[name], limit)) for name in names], width, INDENT)
    return "".join(out).rstrip("\n")


def print_group_help() -> bool:
    """Print the group's help as click would and return True; False (nothing printed)
    when click must render it (a program name click would show another way)."""
    prog = program_name()
    if prog is None:
        return False
    text = render(prog, help_width()) + "\n"
    sys.stdout.write(text)
    sys.stdout.flush()
    return True

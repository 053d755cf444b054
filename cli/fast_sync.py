"""`agentctl sync` on an unchanged home, answered before click, pydantic or cryptography
is imported: the command line is recognised here, the decision is
lib/pipeline/idle_inputs.py's (every input equal to those the normal path kept its
answer for), and the kept records are printed as the normal path prints them (JSON
lines, or cli/sync_summary.py's lines on a terminal). Anything else falls through to
the normal path, which does everything as before."""

from __future__ import annotations

import os
import sys

QUIET = ("-q", "--quiet")


def sync_request(argv: list[str]) -> tuple[list[str], bool] | None:
    """(source names, --json) of `agentctl [-q] sync [--json] [-q] [NAME ...]`; None for
    any other command line (another option, `--`, a global option with a value)."""
    names: list[str] = []
    as_json = False
    seen_sync = False
    for token in argv:
        if token in QUIET:
            continue
        if not seen_sync:
            if token != "sync":
                return None
            seen_sync = True
        elif token == "--json":
            as_json = True
        elif token.startswith("-"):
            return None
        else:
            names.append(token)
    return (names, as_json) if seen_sync else None


def answer_idle_sync(argv: list[str]) -> bool:
    """Print the kept idle answer when it holds; False (nothing printed) otherwise."""
    request = sync_request(argv)
    if request is None:
        return False
    names, as_json = request
    from lib.pipeline.idle_inputs import answer

    taken: dict = {}  # the home digests the decision observed: the early start takes them
    lines = answer(names, os.environ, taken)
    if lines is None:
        # the normal path runs: a source whose home changed will be listed, so its Codex
        # starts now, while the normal path imports (lib/pipeline/idle_early_start.py)
        from cli.version import VERSION
        from lib.pipeline.idle_early_start import start_changed_homes

        # the driver's `initialize` names agentctl's version (the installed metadata's, equal)
        start_changed_homes(names, os.environ, taken, client_version=VERSION)
        return False
    stdout = sys.stdout
    if stdout is None:
        return False  # no stdout at all: what the normal path does about it
    try:  # the summary shows values of these lines; neither can fail half-way
        "".join(lines).encode(stdout.encoding or "utf-8", stdout.errors or "strict")
    except (UnicodeError, LookupError):
        return False  # the normal path says what is wrong
    if not as_json and stdout.isatty():
        return _show_summary(lines)
    for line in lines:  # as JsonLinesSink writes: a line, then a flush (a closed pipe: cli/main.py)
        stdout.write(line)
        stdout.flush()
    return True


def _show_summary(lines: list[str]) -> bool:
    """The terminal summary of the kept records, rendered whole before anything is shown
    (an answer it cannot render goes to the normal path)."""
    import io
    import json

    from cli.sync_summary import KINDS, SummaryLines

    shown = io.StringIO()
    stdout = sys.stdout
    try:
        records = [json.loads(line) for line in lines]
        if any(record.get("record") == "error" for record in records):
            return False  # an idle answer has none; what the normal path prints on stderr
        summary = SummaryLines()
        sys.stdout = shown
        for record in records:
            if record.get("record") in KINDS:
                summary.emit(record["record"], record)
    except Exception:  # noqa: BLE001 - not an answer this can show: the normal path shows it
        return False
    finally:
        sys.stdout = stdout
    stdout.write(shown.getvalue())
    stdout.flush()
    return True

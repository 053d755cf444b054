"""`lib/transcript.py`: a published session as a transcript for people (pure: lines out)."""

from __future__ import annotations

from lib.fabric.session_graph import manifest_value
from lib.fabric.values import Link
from lib.transcript import render_transcript
from lib.types import PREVIEW_LIMIT, NormalizedMessage

KEY = "codex/019c47da-1300-7835-8405-a03ed5000991"
TEST_OUTPUT = "\n".join(
    [f"tests/test_invoice.py::test_case_{n:02d} PASSED" for n in range(1, 10)] + ["", "9 passed in 0.42s"]
)


def message(n: int, role: str, kind: str, text: str, timestamp: str | None) -> dict:
    return NormalizedMessage(
        id=f"item-{n}", role=role, kind=kind, text=text, timestamp=timestamp, event_index=0
    ).to_wire()


def realistic_manifest(messages: list[dict] | None = None, **summary_changes) -> dict:
    """A manifest as publication writes it (lib/fabric/session_graph.manifest_value)."""
    summary = {
        "nativeSessionId": "019c47da-1300-7835-8405-a03ed5000991",
        "title": "Fix rounding in invoice totals",
        "cwd": "/home/demo/src/billing",
        "createdAt": "2026-02-10T14:00:00.000Z",
        "updatedAt": "2026-02-11T09:30:00.000Z",
        "archived": False,
        "active": False,
        "gitRepo": "https://github.com/acme/billing.git",
        "gitBranch": "fix/rounding",
        "gitWorktreeRoot": "/home/demo/src/billing",
        "startedAs": None,
        **summary_changes,
    }
    if messages is None:
        messages = [
            message(1, "user", "userMessage", "Invoice totals are off by a cent on some orders. Find out why.",
                    "2026-02-10T14:00:00.000Z"),
            message(2, "other", "reasoning", "Looking at how totals are summed", "2026-02-10T14:00:03.000Z"),
            message(3, "tool", "commandExecution", "pytest -q tests/test_invoice.py\n" + TEST_OUTPUT,
                    "2026-02-10T14:00:09.000Z"),
            message(4, "assistant", "agentMessage",
                    "The totals are summed as floats in `invoice.py`; switching to Decimal fixes it. "
                    "I changed `Invoice.total` and added `test_total_is_exact` for 0.1 + 0.2.",
                    "2026-02-10T14:01:00.000Z"),
            message(5, "user", "userMessage", "Thanks, ship it.", "2026-02-11T09:30:00.000Z"),
        ]
    return manifest_value(
        owner="did:key:z6MkOwner",
        key=KEY,
        source_id="codex",
        driver="codex-app-server",
        native_session_id=summary["nativeSessionId"],
        metadata={"id": summary["nativeSessionId"], "preview": "Invoice totals are off"},
        summary=summary,
        messages=messages,
        chunks=[{"part": 0, "chunk": Link("of:fid1:chunk", "did:key:z6MkOwner"), "contentHash": "sha256:00",
                 "byteLength": 3200, "eventCount": 2}],
        snapshot_hash="sha256:11",
        revision="initial:019c47da",
        observed_at="2026-02-12T09:00:00.000Z",
        complete=True,
    )


def test_the_header_names_title_source_directory_branch_times_and_status():
    lines = render_transcript(realistic_manifest(), {"key": KEY, "status": "complete"}, width=100)
    assert lines[0] == "Fix rounding in invoice totals"
    assert lines[1] == "=" * len(lines[0])
    header = "\n".join(lines[: lines.index("")])
    for expected in (
        f"key        {KEY}",
        "source     codex (codex-app-server)",
        "directory  /home/demo/src/billing",
        "repository https://github.com/acme/billing.git",
        "branch     fix/rounding",
        "created    2026-02-10 14:00:00 UTC",
        "updated    2026-02-11 09:30:00 UTC",
        "observed   2026-02-12 09:00:00 UTC",
        "status     complete",
        "messages   5",
        "events     2 in 1 chunk, 3.1 KiB",
    ):
        assert expected in header.splitlines(), expected


def test_every_message_shows_its_role_and_time_and_its_text():
    text = "\n".join(render_transcript(realistic_manifest(), width=100))
    body = text[text.index("\n\n"):]
    # The date shows on the first message and when the day changes; otherwise the time only.
    assert "\nuser · 2026-02-10 14:00:00\n  Invoice totals are off by a cent on some orders. Find out why.\n" in body
    assert "\nother · reasoning · 14:00:03\n  Looking at how totals are summed\n" in body
    assert "\ntool · commandExecution · 14:00:09\n  pytest -q tests/test_invoice.py\n" in body
    assert "\nassistant · 14:01:00\n  The totals are summed as floats" in body
    assert body.endswith("\nuser · 2026-02-11 09:30:00\n  Thanks, ship it.")


def test_long_tool_output_is_folded_and_conversation_is_not():
    lines = render_transcript(realistic_manifest(), width=100, fold_after=4)
    start = lines.index("tool · commandExecution · 14:00:09")
    assert lines[start + 1: start + 6] == [
        "  pytest -q tests/test_invoice.py",
        "  tests/test_invoice.py::test_case_01 PASSED",
        "  tests/test_invoice.py::test_case_02 PASSED",
        "  tests/test_invoice.py::test_case_03 PASSED",
        "  … (8 more lines)",
    ]
    assert "9 passed in 0.42s" not in "\n".join(lines)
    # One line over the limit is shown rather than folded into "1 more lines".
    short = "\n".join(f"line {n}" for n in range(5))
    shown = render_transcript(realistic_manifest([message(1, "tool", "commandExecution", short, None)]), fold_after=4)
    assert shown[-5:] == [f"  line {n}" for n in range(5)]
    # A user's long message is never folded.
    long_user = "\n".join(f"point {n}" for n in range(30))
    shown = render_transcript(realistic_manifest([message(1, "user", "userMessage", long_user, None)]), fold_after=4)
    assert shown[-30:] == [f"  point {n}" for n in range(30)]


def test_text_wraps_to_the_width_and_every_line_fits():
    lines = render_transcript(realistic_manifest(cwd="/home/demo/" + "very-long-directory-name/" * 6), width=48)
    assert all(len(line) <= 48 for line in lines), [line for line in lines if len(line) > 48]
    assert "  The totals are summed as floats in" in lines
    assert any(line.startswith("directory  /home/demo/very-long") for line in lines)
    assert any(line.startswith(" " * 11) and "very-long" in line for line in lines)  # continued under its value


def test_a_published_text_cut_at_the_preview_limit_says_so():
    cut = "x" * (PREVIEW_LIMIT + 100)  # NormalizedMessage keeps the first 500 characters
    lines = render_transcript(realistic_manifest([message(1, "assistant", "agentMessage", cut, None)]))
    assert lines[-1] == f"  … (the published text stops at {PREVIEW_LIMIT} characters)"


def test_missing_fields_read_as_unknown_and_nothing_raises():
    manifest = {"key": "claude/abc", "sourceId": "claude", "normalized": {"messages": [
        {"role": "assistant", "text": ""},
        {"text": "no role, no time"},
        {"role": "tool", "kind": "Bash", "timestamp": "yesterday", "text": None},
        "not a message",
    ]}}
    lines = render_transcript(manifest)
    assert lines[:2] == ["(untitled session)", "=" * len("(untitled session)")]
    for expected in ("source     claude", "directory  (unknown)", "branch     (none)", "created    (unknown)",
                     "updated    (unknown)", "status     (unknown)", "messages   3"):
        assert expected in lines, expected
    assert not any(line.startswith(("repository", "events")) for line in lines)
    assert lines[lines.index("assistant") + 1] == "  (no text)"
    assert lines[lines.index("unknown") + 1] == "  no role, no time"
    assert lines[lines.index("tool · Bash · yesterday") + 1] == "  (no text)"
    assert render_transcript({})[-1] == "(no messages)"


def test_status_comes_from_the_row_and_the_row_has_the_current_checkout():
    manifest = realistic_manifest(archived=True)
    manifest["complete"] = False
    row = {"key": KEY, "status": "deleted", "deletedAt": "2026-02-13T08:00:00.000Z", "gitBranch": None,
           "gitWorktreeRoot": "/home/demo/src/billing", "gitRepo": None}
    lines = render_transcript(manifest, row)
    assert "status     deleted (2026-02-13 08:00:00 UTC), snapshot incomplete, archived" in lines
    assert "branch     (detached HEAD)" in lines
    assert not any(line.startswith("repository") for line in lines)
    without_row = render_transcript(realistic_manifest(active=True))
    assert "status     snapshot complete, active" in without_row


def test_terminal_controls_in_provider_text_are_shown_escaped_never_sent():
    hostile = "ok\x1b[2J\x1b]0;owned\x07 \u202eevil\x9b"
    manifest = realistic_manifest([message(1, "tool", "commandExecution", hostile, None)], title="t\x1b[31m")
    text = "\n".join(render_transcript(manifest))
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\x9b" not in text
    assert "  ok\\x1b[2J\\x1b]0;owned\\x07 \\u202eevil\\x9b" in text
    assert text.startswith("t\\x1b[31m\n")

"""Cell IDs from causes, the spec's top-level causes, and links to cells."""

from __future__ import annotations

from lib.fabric.cell_id import (
    all_session_index_cause,
    cell_id,
    command_receipt_cause,
    commands_cause,
    health_cause,
    link_to,
    receipts_cause,
    recent_session_index_cause,
    session_chunk_cause,
    session_version_cause,
)
from lib.fabric.values import Link

SPACE = "did:key:z6MkSpace"
OWNER = "did:key:z6MkOwner"


def test_the_design_vector_names_the_same_cell_as_common_fabric():
    assert cell_id("location/2026-07-01") == "of:fid1:d7_RmD4fNpTUheithVm0Q1Vha0Rn32c06qA_hOHE8x8"


def test_equal_causes_name_one_cell_whatever_their_key_order():
    a = {"spaceDid": SPACE, "ownerDid": OWNER, "agentConnector": "health"}
    b = {"agentConnector": "health", "ownerDid": OWNER, "spaceDid": SPACE}
    assert cell_id(a) == cell_id(b) == cell_id(health_cause(SPACE, OWNER))
    assert cell_id(a) != cell_id({**a, "ownerDid": "did:key:z6MkOther"})


def test_top_level_causes_carry_space_owner_and_the_spec_field():
    base = {"spaceDid": SPACE, "ownerDid": OWNER}
    assert recent_session_index_cause(SPACE, OWNER) == {
        **base,
        "agentConnector": "recent-session-index",
    }
    assert all_session_index_cause(SPACE, OWNER) == {**base, "agentConnector": "all-session-index"}
    assert health_cause(SPACE, OWNER) == {**base, "agentConnector": "health"}
    assert commands_cause(SPACE, OWNER) == {**base, "agentConnector": "commands"}
    assert commands_cause(SPACE, OWNER, producer="of:pattern") == {
        **base,
        "agentConnector": "commands",
        "producer": "of:pattern",
    }
    assert receipts_cause(SPACE, OWNER) == {**base, "agentConnector": "receipts"}


def test_session_chunk_and_receipt_causes_add_their_durable_identities():
    assert session_version_cause(
        SPACE,
        OWNER,
        source_id="codex",
        native_session_id="session-id",
        driver="codex-app-server",
        content_hash="sha256:ab",
    ) == {
        "spaceDid": SPACE,
        "ownerDid": OWNER,
        "agentConnector": "session-version",
        "sourceId": "codex",
        "nativeSessionId": "session-id",
        "driver": "codex-app-server",
        "contentHash": "sha256:ab",
    }
    assert session_chunk_cause(
        SPACE, OWNER, source_id="codex", native_session_id="s", part=2, content_hash="sha256:cd"
    ) == {
        "spaceDid": SPACE,
        "ownerDid": OWNER,
        "agentConnector": "session-chunk",
        "sourceId": "codex",
        "nativeSessionId": "s",
        "part": 2,
        "contentHash": "sha256:cd",
    }
    assert command_receipt_cause(SPACE, OWNER, command_id="c1") == {
        "spaceDid": SPACE,
        "ownerDid": OWNER,
        "agentConnector": "command-receipt",
        "commandId": "c1",
    }


def test_every_top_level_cell_is_distinct():
    ids = {
        cell_id(c)
        for c in (
            recent_session_index_cause(SPACE, OWNER),
            all_session_index_cause(SPACE, OWNER),
            health_cause(SPACE, OWNER),
            commands_cause(SPACE, OWNER),
            commands_cause(SPACE, OWNER, producer="of:p"),
            receipts_cause(SPACE, OWNER),
            command_receipt_cause(SPACE, OWNER, command_id="c1"),
            command_receipt_cause(SPACE, OWNER, command_id="c1", producer="of:p"),
        )
    }
    assert len(ids) == 8


def test_a_link_to_a_cell_names_its_id_space_and_path():
    target = cell_id(receipts_cause(SPACE, OWNER))
    link = link_to(target, SPACE, ["receipts", 0])
    assert link == Link(target, SPACE, ("receipts", 0))
    assert link.to_json() == {
        "/": {"link@1": {"id": target, "path": ["receipts", 0], "space": SPACE}}
    }
    # a cause holding a link names the same cell as one holding the link's JSON form
    assert cell_id({"parent": link}) == cell_id({"parent": link.to_json()})

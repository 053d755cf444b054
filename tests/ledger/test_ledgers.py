"""CommandLedgers: one spec-exact ledger per queue under one private directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lib.errors import CodedError
from lib.ledger import CommandLedger, CommandLedgers, LedgerError
from lib.ledger.ledgers import producer_file_name
from lib.receipts import parse_command_receipt
from tests.ledger.helpers import receipt


def test_the_same_id_on_two_queues_is_kept_apart(tmp_path: Path):
    with CommandLedgers(tmp_path / "ledgers") as ledgers:
        ledgers.put(receipt("cmd-1"))
        ledgers.put(receipt("cmd-1", producer="did:key:producer", status="failed",
                            error={"code": "x", "message": "y", "retryable": False}))
        assert ledgers.get("cmd-1")["status"] == "succeeded"
        assert "producer" not in ledgers.get("cmd-1")
        theirs = ledgers.get("cmd-1", "did:key:producer")
        assert theirs["status"] == "failed" and theirs["producer"] == "did:key:producer"
        assert ledgers.get("cmd-1", "did:key:other") is None
    names = sorted(os.listdir(tmp_path / "ledgers"))
    assert "owner.json" in names and producer_file_name("did:key:producer") in names


def test_put_accepts_a_command_receipt(tmp_path: Path):
    with CommandLedgers(tmp_path / "ledgers") as ledgers:
        ledgers.put(parse_command_receipt(receipt("cmd-2", producer="p")))
        assert ledgers.get("cmd-2", "p")["producer"] == "p"


def test_pending_count_sums_every_queue_and_mark_published_clears_one(tmp_path: Path):
    with CommandLedgers(tmp_path / "ledgers") as ledgers:
        ledgers.put(receipt("a"))
        ledgers.put(receipt("a", producer="p1"))
        ledgers.put(receipt("b", producer="p2"))
        assert ledgers.pending_publication_count() == 3
        ledgers.mark_published("a", "p1")
        assert ledgers.pending_publication_count() == 2
        assert sorted((r["commandId"], r.get("producer")) for r in ledgers.pending()) == [
            ("a", None), ("b", "p2")
        ]
        assert len(ledgers.receipts()) == 3


def test_reopening_finds_producer_ledgers_already_on_disk(tmp_path: Path):
    directory = tmp_path / "ledgers"
    with CommandLedgers(directory) as ledgers:
        ledgers.put(receipt("x", producer="did:key:p", status="in-flight"))
        ledgers.put(receipt("y"))
    with CommandLedgers(directory) as again:
        assert again.pending_publication_count() == 2
        found = {(r["commandId"], r.get("producer")) for r in again.receipts()}
        assert found == {("x", "did:key:p"), ("y", None)}


def test_the_directory_is_created_private(tmp_path: Path):
    directory = tmp_path / "state" / "ledgers" / "abc"
    CommandLedgers(directory).close()
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


def test_a_group_readable_directory_is_refused(tmp_path: Path):
    directory = tmp_path / "ledgers"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)
    with pytest.raises(CodedError) as caught:
        CommandLedgers(directory)
    assert caught.value.code == "unsafe-ledger-path"


def test_a_producer_file_holding_another_queue_is_refused(tmp_path: Path):
    directory = tmp_path / "ledgers"
    CommandLedgers(directory).close()
    with CommandLedger.open(directory / producer_file_name("did:key:a")) as wrong:
        wrong.put(receipt("z", producer="did:key:b"))
    with pytest.raises(LedgerError) as caught:
        CommandLedgers(directory)
    assert caught.value.code == "invalid-ledger"


def test_closed_ledgers_refuse_use(tmp_path: Path):
    ledgers = CommandLedgers(tmp_path / "ledgers")
    ledgers.close()
    with pytest.raises(LedgerError):
        ledgers.get("a")

"""Private modes, unsafe paths, two-slot recovery and failed writes, on real files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lib.fabric.private_paths import UnsafeStatePath
from lib.ledger import CommandLedger, LedgerError
from lib.ledger import files as ledger_files
from tests.ledger.helpers import read_json, receipt, write_json


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_directory_is_0700_and_both_slots_and_the_lock_are_0600(tmp_path: Path):
    path = tmp_path / "deep" / "ledger" / "l.json"
    old = os.umask(0)
    try:
        with CommandLedger.open(path) as ledger:
            ledger.put(receipt())
    finally:
        os.umask(old)
    assert mode(path.parent) == 0o700
    for name in ("l.json", "l.json.previous", "l.json.lock"):
        assert mode(path.parent / name) == 0o600
    assert sorted(os.listdir(path.parent)) == ["l.json", "l.json.lock", "l.json.previous"]  # no temporaries


@pytest.mark.parametrize("slot", ["l.json", "l.json.previous", "l.json.lock"])
def test_a_symlinked_slot_is_refused(tmp_path: Path, slot: str):
    elsewhere = tmp_path / "elsewhere.json"
    write_json(elsewhere, "{}")
    (tmp_path / "d").mkdir(mode=0o700)
    os.symlink(elsewhere, tmp_path / "d" / slot)
    with pytest.raises(UnsafeStatePath) as info:
        CommandLedger.open(tmp_path / "d" / "l.json")
    assert info.value.code == "unsafe-ledger-path" and "symbolic link" in info.value.message
    assert info.value.exit_code == 2


def test_a_symlinked_directory_is_refused(tmp_path: Path):
    (tmp_path / "real").mkdir(mode=0o700)
    os.symlink(tmp_path / "real", tmp_path / "link")
    with pytest.raises(UnsafeStatePath, match="symbolic link"):
        CommandLedger.open(tmp_path / "link" / "l.json")


@pytest.mark.parametrize("bits", [0o040, 0o004, 0o020])
def test_a_slot_open_to_group_or_others_is_refused_not_tightened(tmp_path: Path, bits: int):
    path = tmp_path / "d" / "l.json"
    CommandLedger.open(path).close()
    os.chmod(path, 0o600 | bits)
    with pytest.raises(UnsafeStatePath, match="open to group or others"):
        CommandLedger.open(path)
    assert mode(path) == 0o600 | bits


def test_a_directory_open_to_group_or_others_is_refused(tmp_path: Path):
    (tmp_path / "d").mkdir(mode=0o755)
    os.chmod(tmp_path / "d", 0o755)
    with pytest.raises(UnsafeStatePath, match="directory .* open to group or others"):
        CommandLedger.open(tmp_path / "d" / "l.json")


def test_a_slot_that_is_a_directory_is_refused(tmp_path: Path):
    (tmp_path / "d").mkdir(mode=0o700)
    (tmp_path / "d" / "l.json").mkdir(mode=0o700)
    with pytest.raises(UnsafeStatePath, match="not a regular file"):
        CommandLedger.open(tmp_path / "d" / "l.json")


def test_a_slot_of_another_owner_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "d" / "l.json"
    CommandLedger.open(path).close()
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)  # as if the files were another user's
    with pytest.raises(UnsafeStatePath, match="belongs to uid"):
        CommandLedger.open(path)


def three_generations(path: Path) -> None:
    with CommandLedger.open(path) as ledger:
        ledger.put(receipt("a"))  # generation 1 -> .previous
        ledger.put(receipt("b"))  # generation 2 -> path


def test_open_picks_the_highest_valid_generation_whichever_slot_holds_it(tmp_path: Path):
    path = tmp_path / "l.json"
    three_generations(path)
    assert read_json(path)["generation"] == 2
    assert read_json(path.with_name("l.json.previous"))["generation"] == 1
    with CommandLedger.open(path) as ledger:
        assert ledger.generation == 2
        ledger.put(receipt("c"))  # generation 3 overwrites the inactive slot, .previous
    assert read_json(path)["generation"] == 2
    assert read_json(path.with_name("l.json.previous"))["generation"] == 3
    with CommandLedger.open(path) as ledger:
        assert ledger.generation == 3 and len(ledger.receipts()) == 3


def test_a_corrupt_newest_slot_falls_back_to_the_older_valid_one_and_is_repaired(tmp_path: Path):
    path = tmp_path / "l.json"
    three_generations(path)
    write_json(path, '{"schema": "commonfabric.agent-connector.command-ledger", "generati')  # torn write
    with CommandLedger.open(path) as ledger:
        assert ledger.generation == 1
        assert [r["commandId"] for r in ledger.receipts()] == ["a"]
    assert read_json(path) == read_json(path.with_name("l.json.previous"))  # repaired before open returned


def test_a_missing_slot_is_repaired_from_the_other(tmp_path: Path):
    path = tmp_path / "l.json"
    three_generations(path)
    os.unlink(path.with_name("l.json.previous"))
    with CommandLedger.open(path) as ledger:
        assert ledger.generation == 2
    assert read_json(path.with_name("l.json.previous")) == read_json(path)
    assert mode(path.with_name("l.json.previous")) == 0o600


def test_equal_generations_with_different_states_are_an_error(tmp_path: Path):
    path = tmp_path / "l.json"
    three_generations(path)
    doc = read_json(path)
    doc["receipts"] = {}
    doc["pendingPublicationCommandIds"] = []
    write_json(path.with_name("l.json.previous"), doc)  # generation 2 as well, another state
    with pytest.raises(LedgerError) as info:
        CommandLedger.open(path)
    assert info.value.code == "ledger-slots-disagree"


def test_both_slots_invalid_is_an_error_naming_the_configured_path(tmp_path: Path):
    path = tmp_path / "l.json"
    three_generations(path)
    write_json(path, "[]")
    write_json(path.with_name("l.json.previous"), "nope")
    with pytest.raises(LedgerError) as info:
        CommandLedger.open(path)
    assert info.value.code == "invalid-ledger" and f"{path} is not a current" in info.value.message


def test_stale_temporaries_of_a_killed_writer_are_removed_on_open(tmp_path: Path):
    path = tmp_path / "l.json"
    CommandLedger.open(path).close()
    write_json(tmp_path / ".l.json.tmp-1-abcd", "partial")
    CommandLedger.open(path).close()
    assert not (tmp_path / ".l.json.tmp-1-abcd").exists()


def test_fake_rename_failure_leaves_memory_and_disk_old_and_the_next_write_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "l.json"
    with CommandLedger.open(path) as ledger:
        ledger.put(receipt("a"))
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

        def fail(src: object, dst: object) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(ledger_files.os, "replace", fail)
        with pytest.raises(LedgerError) as info:
            ledger.put(receipt("b"))
        assert info.value.code == "ledger-write-failed" and "No space left" in info.value.message
        with pytest.raises(LedgerError):
            ledger.mark_published("a")
        assert ledger.generation == 1 and ledger.get("b") is None and ledger.pending_publication_count() == 1
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # old state, no temporaries
        monkeypatch.undo()
        ledger.put(receipt("b"))
        assert ledger.generation == 2
    with CommandLedger.open(path) as again:
        assert again.generation == 2 and [r["commandId"] for r in again.pending()] == ["a", "b"]


def test_a_directory_made_read_only_mid_way_fails_the_write_without_poisoning_the_ledger(tmp_path: Path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    path = tmp_path / "d" / "l.json"
    with CommandLedger.open(path) as ledger:
        ledger.put(receipt("a"))
        os.chmod(path.parent, 0o500)
        try:
            with pytest.raises(LedgerError, match="cannot write"):
                ledger.put(receipt("b"))
        finally:
            os.chmod(path.parent, 0o700)
        ledger.put(receipt("c"))
        assert [r["commandId"] for r in ledger.receipts()] == ["a", "c"]


def test_fake_fsync_failure_of_the_temporary_leaves_no_temporary_and_the_old_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "l.json"
    with CommandLedger.open(path) as ledger:
        ledger.put(receipt("a"))
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

        def fail(fd: int) -> None:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(ledger_files.os, "fsync", fail)
        with pytest.raises(LedgerError, match="Input/output error"):
            ledger.put(receipt("b"))
        monkeypatch.undo()
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
        ledger.put(receipt("b"))
        assert ledger.generation == 2

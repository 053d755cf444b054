"""Every way a ledger file or a receipt is refused, each with one CodedError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lib.ledger import LEDGER_SCHEMA, CommandLedger, InvalidReceipt, LedgerError
from tests.ledger.helpers import receipt, write_json


def ledger_doc(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"schema": LEDGER_SCHEMA, "generation": 1,
                           "receipts": {"a": receipt("a")}, "pendingPublicationCommandIds": ["a"]}
    doc.update(overrides)
    return doc


BAD_FILES = {
    "not-json": "{",
    "nan-constant": '{"schema": "' + LEDGER_SCHEMA + '", "generation": NaN}',
    "duplicate-key": ('{"schema": "' + LEDGER_SCHEMA + '", "schema": "' + LEDGER_SCHEMA + '", "generation": 0,'
                      ' "receipts": {}, "pendingPublicationCommandIds": []}'),
    "array": [],
    "older-schema": ledger_doc(schema="commonfabric.agent-connector.command-ledger-v0"),
    "no-schema": {k: v for k, v in ledger_doc().items() if k != "schema"},
    "extra-field": ledger_doc(extra=1),
    "missing-pending": {k: v for k, v in ledger_doc().items() if k != "pendingPublicationCommandIds"},
    "negative-generation": ledger_doc(generation=-1),
    "unsafe-generation": ledger_doc(generation=2**53),
    "float-generation": ledger_doc(generation=1.0),
    "bool-generation": ledger_doc(generation=True),
    "string-generation": ledger_doc(generation="1"),
    "receipts-array": ledger_doc(receipts=[receipt("a")], pendingPublicationCommandIds=[]),
    "key-not-command-id": ledger_doc(receipts={"b": receipt("a")}, pendingPublicationCommandIds=[]),
    "invalid-receipt": ledger_doc(receipts={"a": receipt("a", status="done")}),
    "result-not-fvj1": ledger_doc(receipts={"a": receipt("a", result="{}")}),
    "result-not-string": ledger_doc(receipts={"a": receipt("a", result={})}),
    "result-not-object": ledger_doc(receipts={"a": receipt("a", result="fvj1:[1]")}),
    "pending-not-array": ledger_doc(pendingPublicationCommandIds="a"),
    "pending-not-strings": ledger_doc(pendingPublicationCommandIds=[1]),
    "pending-repeated": ledger_doc(pendingPublicationCommandIds=["a", "a"]),
    "pending-unknown": ledger_doc(pendingPublicationCommandIds=["zzz"]),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_an_invalid_or_older_ledger_file_is_refused_on_open(tmp_path: Path, name: str):
    path = tmp_path / "l.json"
    write_json(path, BAD_FILES[name])
    with pytest.raises(LedgerError) as info:
        CommandLedger.open(path)
    assert info.value.code == "invalid-ledger"
    assert str(path) in info.value.message
    CommandLedger.open(tmp_path / "other.json").close()  # the failed open left no lock behind


def test_a_valid_file_written_by_hand_opens(tmp_path: Path):
    path = tmp_path / "l.json"
    write_json(path, ledger_doc(receipts={"a": receipt("a", result='fvj1:{"n":{"/Undefined@1":null}}')}))
    with CommandLedger.open(path) as ledger:
        assert ledger.generation == 1 and ledger.pending_publication_count() == 1


BAD_RECEIPTS = {
    "not-object": ["a"],
    "wrong-schema": receipt(schema="commonfabric.agent-connector.command"),
    "unknown-field": receipt(payload={}),
    "missing-command-id": {k: v for k, v in receipt().items() if k != "commandId"},
    "empty-command-id": receipt(""),
    "untrimmed-command-id": receipt(" a"),
    "long-command-id": receipt("x" * 257),
    "missing-source": {k: v for k, v in receipt().items() if k != "sourceId"},
    "long-native-session": receipt(nativeSessionId="s" * 1025),
    "bad-status": receipt(status="done"),
    "claimed-not-iso": receipt(claimedAt="2026-01-02 03:04:05"),
    "completed-not-string": receipt(completedAt=1),
    "empty-producer": receipt(producer=""),
    "error-not-object": receipt(error="boom"),
    "error-missing-retryable": receipt(error={"code": "c", "message": "m"}),
    "error-empty-code": receipt(error={"code": "", "message": "m", "retryable": True}),
    "error-retryable-not-bool": receipt(error={"code": "c", "message": "m", "retryable": 0}),
    "result-not-object": receipt(result=[1]),
}


@pytest.mark.parametrize("name", sorted(BAD_RECEIPTS))
def test_put_refuses_an_invalid_receipt_and_writes_nothing(tmp_path: Path, name: str):
    with CommandLedger.open(tmp_path / "l.json") as ledger:
        with pytest.raises(InvalidReceipt) as info:
            ledger.put(BAD_RECEIPTS[name])
        assert info.value.code == "invalid-receipt"
        assert ledger.generation == 0 and ledger.pending_publication_count() == 0


def test_every_optional_receipt_field_is_accepted(tmp_path: Path):
    full = receipt("a", producer="did:key:p", providerOperationId="op-1", status="needs-confirmation",
                   error={"code": "c", "message": "m", "retryable": True}, result={})
    with CommandLedger.open(tmp_path / "l.json") as ledger:
        ledger.put(full)
        assert ledger.get("a") == full

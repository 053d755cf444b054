"""The local command ledger: receipts on disk and the set awaiting publication."""

from lib.ledger.files import LedgerError
from lib.ledger.ledger import LEDGER_SCHEMA, CommandLedger
from lib.ledger.ledgers import CommandLedgers
from lib.ledger.receipts import InvalidReceipt, validate_receipt
from lib.receipts import RECEIPT_SCHEMA

__all__ = ["LEDGER_SCHEMA", "RECEIPT_SCHEMA", "CommandLedger", "CommandLedgers", "InvalidReceipt", "LedgerError", "validate_receipt"]

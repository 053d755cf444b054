"""Remote URL sanitizing and `git remote -v` parsing, as pure functions."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from lib.git_context import GitRemote, parse_remote_listing, sanitize_remote_url


def test_unrecognised_listing_lines_are_skipped():
    listing = "noise\norigin\thttps://example.com/p.git (push)\norigin\tbroken line\n"

    assert parse_remote_listing(listing) == (
        GitRemote(name="origin", url="https://example.com/p.git", directions=("push",)),
    )


@pytest.mark.parametrize(
    ("url", "published"),
    [
        ("https://github.com/acme/p.git", "https://github.com/acme/p.git"),
        ("https://x-access-token:ghs_abc@github.com/acme/p.git", "https://github.com/acme/p.git"),
        ("https://ghp_token@github.com/acme/p", "https://github.com/acme/p"),
        ("https://github.com/acme/p.git?private_token=abc", "https://github.com/acme/p.git"),
        ("https://github.com/acme/p.git#main", "https://github.com/acme/p.git"),
        ("https://u:p@host:8443/p?q=1#f", "https://host:8443/p"),
        ("https://host?q=1", "https://host"),
        ("ssh://git@example.com:2222/acme/p.git", "ssh://example.com:2222/acme/p.git"),
        ("git://example.com/p.git", "git://example.com/p.git"),
        ("HTTPS://Example.COM/Acme/P.git/", "HTTPS://Example.COM/Acme/P.git/"),
        ("https://[2001:db8::1]:8080/p.git", "https://[2001:db8::1]:8080/p.git"),
        ("https://example.com/my%20repo.git", "https://example.com/my%20repo.git"),
        ("git@github.com:acme/p.git", "git@github.com:acme/p.git"),
        ("github.com:acme/p.git", "github.com:acme/p.git"),
        ("deploy@[2001:db8::1]:p.git", "deploy@[2001:db8::1]:p.git"),
    ],
)
def test_publishable_remote_urls_keep_gits_spelling_minus_secrets(url, published):
    assert sanitize_remote_url(url) == published


@pytest.mark.parametrize(
    "url",
    [
        "/srv/git/p.git",
        "./p.git",
        "../p.git",
        "p.git",
        "~/p.git",
        "file:///srv/git/p.git",
        "FILE:///srv/git/p.git",
        "dir/with:colon",
        "C:\\repos\\p.git",
        "C:/repos/p.git",
        "persistent-https::https://example.com/p",
        "ext::ssh -i key example.com %S p.git",
        "fd::17",
        "https:///no-host",
        "https://user:pa/ss@host/p.git",
        "https://host:notaport/p.git",
        "https://[::1/p.git",
        ":no-host",
        "user@:no-host",
        "",
        " https://example.com/p.git",
        "https://example.com/p\n.git",
    ],
)
def test_local_helper_and_opaque_remote_forms_are_omitted(url):
    assert sanitize_remote_url(url) is None


_USERINFO = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=%:@",
    min_size=6,
    max_size=24,
)
_LABEL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
_PATH = st.lists(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-._~%", min_size=1, max_size=10),
    max_size=4,
).map(lambda segments: "".join("/" + segment for segment in segments))


@given(
    scheme=st.sampled_from(["https", "http", "ssh", "git", "ftp", "hg+https"]),
    user=st.one_of(st.none(), _LABEL),
    password=_USERINFO,
    host=st.lists(_LABEL, min_size=1, max_size=3).map(".".join),
    port=st.one_of(st.none(), st.integers(min_value=1, max_value=65535)),
    path=_PATH,
    secret_in_query=st.booleans(),
    secret_in_fragment=st.booleans(),
)
def test_a_password_never_survives_sanitizing_a_standard_url(
    scheme, user, password, host, port, path, secret_in_query, secret_in_fragment
):
    authority = host if port is None else f"{host}:{port}"
    kept = f"{scheme}://{authority}{path}"
    assume(password not in kept)
    userinfo = password if user is None else f"{user}:{password}"
    url = f"{scheme}://{userinfo}@{authority}{path}"
    if secret_in_query:
        url += f"?token={password}"
    if secret_in_fragment:
        url += f"#{password}"

    published = sanitize_remote_url(url)

    assert published == kept
    assert password not in published


@given(url=st.text(max_size=60))
def test_sanitizing_any_text_never_raises_and_never_keeps_a_local_path(url):
    published = sanitize_remote_url(url)

    assert published is None or not published.startswith(("/", "./", "../", "file:"))

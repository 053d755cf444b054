"""Remote URL sanitizing and `git remote -v` parsing, as pure functions."""

from __future__ import annotations

import re

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
        # standard URLs: userinfo, query and fragment go, git's spelling stays
        ("https://github.com/acme/p.git", "https://github.com/acme/p.git"),
        ("https://x-access-token:ghs_abc@github.com/acme/p.git", "https://github.com/acme/p.git"),
        ("https://ghp_token@github.com/acme/p", "https://github.com/acme/p"),
        ("https://github.com/acme/p.git?private_token=abc", "https://github.com/acme/p.git"),
        ("https://github.com/acme/p.git#main", "https://github.com/acme/p.git"),
        ("https://u:p@host:8443/p?q=1#f", "https://host:8443/p"),
        ("https://host?q=1", "https://host"),
        ("http://user:s3cretPW@host/x.git", "http://host/x.git"),
        ("https://us%40er:p%3Aw%2Fd@host/x.git", "https://host/x.git"),
        ("https://user:pa@ss@host/x.git", "https://host/x.git"),
        ("ssh://git@example.com:2222/acme/p.git", "ssh://example.com:2222/acme/p.git"),
        ("ssh://deploy:s3cretPW@example.com/p.git", "ssh://example.com/p.git"),
        ("git+ssh://ghp_tok@example.com/p.git", "git+ssh://example.com/p.git"),
        ("ssh+git://user:pw@example.com:22/p.git", "ssh+git://example.com:22/p.git"),
        ("git://example.com/p.git", "git://example.com/p.git"),
        ("git://anon:pw@example.com:9418/p.git", "git://example.com:9418/p.git"),
        ("ftp://user:pw@example.com/p.git", "ftp://example.com/p.git"),
        ("ftps://user:pw@example.com:990/p.git?x=1#y", "ftps://example.com:990/p.git"),
        ("HTTPS://Example.COM/Acme/P.git/", "HTTPS://Example.COM/Acme/P.git/"),
        ("https://[2001:db8::1]:8080/p.git", "https://[2001:db8::1]:8080/p.git"),
        ("https://tok:pw@[2001:db8::1]:8080/p.git", "https://[2001:db8::1]:8080/p.git"),
        ("ssh://[user@::1]:22/repo", "ssh://[::1]:22/repo"),
        ("ssh://user@[::1]/repo", "ssh://[::1]/repo"),
        ("https://example.com/my%20repo.git", "https://example.com/my%20repo.git"),
        # SCP-style: the form stays, no userinfo at all (not even `git@`)
        ("git@github.com:acme/p.git", "github.com:acme/p.git"),
        ("github.com:acme/p.git", "github.com:acme/p.git"),
        ("ghp_PLANTEDTOKEN123@github.com:acme/x.git", "github.com:acme/x.git"),
        ("user:s3cretPW@host:repo.git", "host:repo.git"),
        ("user:pw/with/slash@host:repo.git", "host:repo.git"),
        ("me@corp.example@host:repo.git", "host:repo.git"),
        ("us%40er:p%3Aw@host:repo.git", "host:repo.git"),
        ("git@host:/srv/repo.git", "host:/srv/repo.git"),
        ("git@host:repo.git?token=abc#frag", "host:repo.git"),
        ("deploy@[2001:db8::1]:p.git", "[2001:db8::1]:p.git"),
        ("user:pw@[::1]:repo", "[::1]:repo"),
        ("[user@::1]:repo", "[::1]:repo"),
        ("[::1]:repo", "[::1]:repo"),
        ("[myhost:123]:src", "[myhost:123]:src"),
        ("[user:pw@myhost:123]:src", "[myhost:123]:src"),
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
        "file://user:pw@host/srv/p.git",
        "dir/with:colon",
        "C:\\repos\\p.git",
        "C:/repos/p.git",
        "persistent-https::https://example.com/p",
        "persistent-https::https://user:pw@example.com/p",
        "ext::ssh -i key example.com %S p.git",
        "fd::17",
        "https:///no-host",
        "https://user:pa/ss@host/p.git",
        "https://host:notaport/p.git",
        "https://[::1/p.git",
        ":no-host",
        "user@:no-host",
        "host:",
        "",
        " https://example.com/p.git",
        "https://example.com/p\n.git",
        # an `@` after the host: a credential with an unescaped separator looks the same
        "https://tok/en@host/p.git",
        "https://tok?en@host/p.git",
        "https://tok#en@host/p.git",
        "https://host/p.git?token=a@b",
        "git@host:a@b.git",
        "tok/en@host:repo.git",
        "ssh://user@::1/repo",
        "https://u:p[w@host/p.git",
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

    # An `@` after the host makes the URL ambiguous: omitted rather than guessed at.
    ambiguous = "@" in password and (secret_in_query or secret_in_fragment)
    assert published == (None if ambiguous else kept)
    assert password not in (published or "")


_SECRET = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=8, max_size=20)
_SCP_USERINFO_NOISE = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-._~%!$&'()*+,;=:@/?#", max_size=8)


@given(
    user=st.one_of(st.none(), _LABEL),
    secret=_SECRET,
    noise=_SCP_USERINFO_NOISE,
    host=st.one_of(st.lists(_LABEL, min_size=1, max_size=3).map(".".join), st.just("[::1]")),
    path=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-._~/", min_size=1, max_size=20),
    tail=st.sampled_from(["", "?token=", "#"]),
)
def test_no_userinfo_survives_sanitizing_an_scp_style_remote(user, secret, noise, host, path, tail):
    kept = f"{host}:{path}"
    assume(secret not in kept and (user is None or user not in kept))
    userinfo = secret + noise if user is None else f"{user}:{secret}{noise}"
    url = f"{userinfo}@{kept}" + (tail + secret if tail else "")
    assume(not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:(:|//)", url))  # a helper or standard URL

    published = sanitize_remote_url(url)

    # Git's rule: a colon with no slash before it makes the remote SCP-style.
    colon, slash = url.find(":"), url.find("/")
    assert published == (kept if slash == -1 or colon < slash else None)

"""Session keys: trimmed, source lowercased, encodeURIComponent-encoded, one slash."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from lib.session_key import (
    SessionKeyError,
    normalize_key_parts,
    parse_session_key,
    session_key,
)


def test_the_spec_example_encodes_the_colon_and_the_slash():
    assert session_key("Codex:Work", "abc/123") == "codex%3Awork/abc%2F123"


def test_both_parts_are_trimmed_and_only_the_source_is_lowercased():
    assert session_key("  Codex\t", "\n AbC-1 ") == "codex/AbC-1"


def test_javascript_trim_removes_a_byte_order_mark_but_keeps_information_separators():
    assert session_key("\ufeffcodex\u3000", "s") == "codex/s"
    with pytest.raises(SessionKeyError):
        session_key("codex\x1f", "s")


def test_encode_uri_component_keeps_its_unreserved_marks_and_encodes_the_rest_as_utf8():
    assert session_key("a", "A-z_0.9!~*'()") == "a/A-z_0.9!~*'()"
    assert session_key("a", "x y%é/😀") == "a/x%20y%25%C3%A9%2F%F0%9F%98%80"


@pytest.mark.parametrize("bad", ["a\x00b", "a\nb", "a\x7fb", "a\x1bb"])
def test_ascii_control_characters_are_refused_with_a_clear_message(bad):
    with pytest.raises(SessionKeyError) as info:
        session_key("codex", bad)
    assert info.value.code == "invalid-session-key"
    assert "control character" in info.value.message
    with pytest.raises(ValueError):
        session_key(bad, "s")


@pytest.mark.parametrize("source,session", [("", "s"), ("codex", "   "), ("codex", "a\ud800")])
def test_empty_parts_and_lone_surrogates_are_refused(source, session):
    with pytest.raises(SessionKeyError):
        session_key(source, session)


@pytest.mark.parametrize("bad", ["codex", "a/b/c", "Codex/s", "codex/a b", "codex/%zz", "codex/%C3", "/s"])
def test_parse_refuses_what_session_key_would_not_produce(bad):
    with pytest.raises(SessionKeyError):
        parse_session_key(bad)


ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="".join(map(chr, [*range(32), 127]))),
    min_size=1,
    max_size=20,
)


@given(ids, ids)
def test_a_key_parses_back_to_its_normalized_parts(source, session):
    try:
        expected = normalize_key_parts(source, session)
    except SessionKeyError:
        assume(False)
    assert parse_session_key(session_key(source, session)) == expected


@given(ids, ids, ids, ids)
def test_distinct_normalized_pairs_never_share_a_key(s1, n1, s2, n2):
    try:
        a = normalize_key_parts(s1, n1)
        b = normalize_key_parts(s2, n2)
    except SessionKeyError:
        assume(False)
    assume(a != b)
    assert session_key(s1, n1) != session_key(s2, n2)


@given(ids, st.sampled_from(["/", "%", "%2F", ":", " "]), ids)
def test_separators_inside_a_part_cannot_forge_another_pair(left, sep, right):
    try:
        key = session_key(left + sep + right, "x")
    except SessionKeyError:
        assume(False)
    assert key.count("/") == 1


def test_keys_of_plain_parts_are_the_ones_the_full_rules_give() -> None:
    """session_key's short path (parts of characters encodeURIComponent keeps) gives the
    key the trim, check and encode steps give, for every such character and mix."""
    import random

    from lib.session_key import _encode, normalize_key_parts

    def full(source: str, session: str) -> str:
        s, n = normalize_key_parts(source, session)
        return _encode(s, "source id") + "/" + _encode(n, "native session id")

    plain = "ABCXYZabcxyz0189_.~!*'()-"
    rng = random.Random(14)
    cases = [(c, c) for c in plain] + [("Codex", "019b8e6d-d000-75e2-820f-e97145aa69c2"), ("ACP.Agent", "S~1")]
    cases += [("".join(rng.choices(plain, k=rng.randint(1, 12))), "".join(rng.choices(plain, k=rng.randint(1, 40))))
              for _ in range(500)]
    for source, session in cases:
        assert session_key(source, session) == full(source, session)

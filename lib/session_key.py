"""Session keys: `<source>/<session>`, each part percent-encoded (spec "Session key").

`session_key(source_id, native_session_id)` trims both values (JavaScript `trim()`
semantics), lowercases the source id, rejects ASCII control characters, percent-encodes
each part the way JavaScript's `encodeURIComponent` does, and joins them with one slash.
The native session id keeps its case. `Codex:Work` + `abc/123` -> `codex%3Awork/abc%2F123`.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

from lib.errors import UsageError
from lib.types import JS_WHITESPACE

__all__ = ["SessionKeyError", "normalize_key_parts", "parse_session_key", "session_key"]

# What JavaScript's String.prototype.trim() removes (WhiteSpace and LineTerminator).
# Python's str.strip() differs: it also strips \x1c-\x1f and \x85, and keeps \ufeff.
# encodeURIComponent keeps A-Z a-z 0-9 and these; quote() always keeps letters, digits, _.-~
_URI_COMPONENT_SAFE = "!*'()"


class SessionKeyError(UsageError, ValueError):
    """An identity that cannot form a session key."""


def _check(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise SessionKeyError("invalid-session-key", f"{what} must be a string, not {type(value).__name__}")
    trimmed = value.strip(JS_WHITESPACE)
    if not trimmed:
        raise SessionKeyError("invalid-session-key", f"{what} must not be empty")
    for ch in trimmed:
        if ch < "\x20" or ch == "\x7f":
            raise SessionKeyError("invalid-session-key", f"{what} must not contain control character U+{ord(ch):04X}: {trimmed!r}")
    return trimmed


def _encode(part: str, what: str) -> str:
    try:
        return quote(part, safe=_URI_COMPONENT_SAFE, encoding="utf-8", errors="strict")
    except UnicodeEncodeError:
        # encodeURIComponent throws URIError on a lone surrogate too
        raise SessionKeyError("invalid-session-key", f"{what} contains a lone surrogate: {part!r}") from None


def normalize_key_parts(source_id: str, native_session_id: str) -> tuple[str, str]:
    """The (source, session) a key names: trimmed, source lowercased, validated."""
    source = _check(source_id, "source id").lower()
    session = _check(native_session_id, "native session id")
    return source, session


# Parts made only of what encodeURIComponent keeps (no space, no control character, nothing
# to trim or encode): the key is the parts as they are, the source lowercased. A listing
# makes three keys per session (issue 14 goal 3), nearly always of such parts.
_PLAIN = re.compile(r"[A-Za-z0-9_.~!*'()-]+")


def session_key(source_id: str, native_session_id: str) -> str:
    if type(source_id) is str and type(native_session_id) is str and _PLAIN.fullmatch(source_id) \
            and _PLAIN.fullmatch(native_session_id):
        return source_id.lower() + "/" + native_session_id
    source, session = normalize_key_parts(source_id, native_session_id)
    return _encode(source, "source id") + "/" + _encode(session, "native session id")


def parse_session_key(key: str) -> tuple[str, str]:
    """(source, session) of a key this module made; raises SessionKeyError otherwise."""
    if not isinstance(key, str) or key.count("/") != 1:
        raise SessionKeyError("invalid-session-key", f"a session key has exactly one '/': {key!r}")
    raw_source, raw_session = key.split("/")
    try:
        source = unquote(raw_source, encoding="utf-8", errors="strict")
        session = unquote(raw_session, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise SessionKeyError("invalid-session-key", f"a session key percent-encodes UTF-8: {key!r}") from None
    try:
        canonical = session_key(source, session)
    except SessionKeyError as exc:
        raise SessionKeyError("invalid-session-key", f"not a session key ({exc.message}): {key!r}") from None
    if canonical != key:
        raise SessionKeyError("invalid-session-key", f"not a canonical session key (expected {canonical!r}): {key!r}")
    return source, session

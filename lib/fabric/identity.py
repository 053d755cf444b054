"""The user's identity: an Ed25519 key in a private file, named by a did:key.

The DID is `did:key:z` + base58btc(ED 01 || public key), the form Common
Fabric uses. Keys and signatures come from the `cryptography` package
(Ed25519 as RFC 8032 specifies it). The key file is created on first use and must stay private: it
is refused when it is a symlink, owned by another user, or readable by group
or others, so a planted or leaked key is never used silently.

File format (JSON, camelCase like every stored format):
    {"schema": "agentctl.identity", "version": 1, "keyType": "Ed25519",
     "secretKey": "<unpadded base64url of the 32-byte RFC 8032 secret key>",
     "did": "did:key:z..."}
"""

from __future__ import annotations

import base64
import binascii
import errno
import json
import os
import re
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from lib.errors import UsageError

# `cryptography` is imported where a key is derived or used (Identity.from_secret_key,
# Identity.sign), not here: is_did and DID_FORM (the configuration, --space) need none of it.

_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_ED25519_MULTICODEC = b"\xed\x01"
SCHEMA = "agentctl.identity"
VERSION = 1


class IdentityError(UsageError):
    """An identity file that cannot be used; `message` says what to do."""



def base58btc(data: bytes) -> str:
    """Bitcoin-alphabet base58; each leading zero byte becomes '1'."""
    number = int.from_bytes(data, "big")
    digits = []
    while number:
        number, rest = divmod(number, 58)
        digits.append(_BASE58[rest])
    zeros = len(data) - len(data.lstrip(b"\0"))
    return "1" * zeros + "".join(reversed(digits))


# W3C DID syntax: did:<method>:<method-specific id>; the method is lowercase letters and
# digits, the id ALPHA / DIGIT / "." / "-" / "_" / percent-escapes, in ":"-joined parts,
# the last one not empty.
_ID_CHAR = r"(?:[A-Za-z0-9._-]|%[0-9A-Fa-f]{2})"
_DID = re.compile(rf"did:[a-z0-9]+:(?:{_ID_CHAR}*:)*{_ID_CHAR}+")
DID_MAX_LENGTH = 2048
DID_FORM = "did:<method>:<id>, like did:key:z6Mk…"


def is_did(text: object) -> bool:
    """Whether `text` is a DID (`did:` + method + `:` + id, W3C DID syntax) of a sane length."""
    return isinstance(text, str) and len(text) <= DID_MAX_LENGTH and _DID.fullmatch(text) is not None


def did_key(public_key: bytes) -> str:
    """The did:key DID of a 32-byte Ed25519 public key."""
    if len(public_key) != 32:
        raise ValueError("an Ed25519 public key is 32 bytes")
    return "did:key:z" + base58btc(_ED25519_MULTICODEC + public_key)


@dataclass(frozen=True)
class Identity:
    """A signing identity. The secret key stays out of repr and equality."""

    did: str
    public_key: bytes
    _secret_key: bytes = field(repr=False, compare=False)

    @classmethod
    def from_secret_key(cls, secret_key: bytes) -> Identity:
        """The identity of a 32-byte secret key (RFC 8032's seed); ValueError for another length."""
        # not `serialization`: it imports the SSH key formats and every cipher (0.1 s loaded)
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        public = Ed25519PrivateKey.from_private_bytes(secret_key).public_key().public_bytes_raw()
        return cls(did=did_key(public), public_key=public, _secret_key=secret_key)

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of message."""
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        return Ed25519PrivateKey.from_private_bytes(self._secret_key).sign(message)


def load_or_create_identity(path: str | os.PathLike[str]) -> Identity:
    """Load the identity at path, creating a new private one when it does not exist.

    A missing parent directory is created with mode 0700. Two processes that
    create at once end with the same identity: the file is published with a
    no-replace hard link, and the loser loads the winner's key.
    """
    path = Path(path)
    try:
        return _load(path)
    except FileNotFoundError:
        pass
    secret_key = secrets.token_bytes(32)
    identity = Identity.from_secret_key(secret_key)
    try:
        published = _publish(path, _serialize(identity, secret_key))
    except OSError as exc:
        raise IdentityError(
            "identity-file-uncreatable",
            f"cannot create identity file {path} ({exc.strerror}); "
            "make its directory writable or choose another path",
        ) from None
    if published:
        return identity
    return _load(path)


def _load(path: Path) -> Identity:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise IdentityError(
                "identity-file-symlink",
                f"identity file {path} is a symbolic link; replace it with the key file itself",
            ) from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):  # nothing there yet: create it
            raise FileNotFoundError(str(path)) from None
        raise IdentityError(
            "identity-file-unreadable",
            f"identity file {path} cannot be read ({exc.strerror}); check its permissions",
        ) from None
    with os.fdopen(fd, "rb") as handle:
        _check_private(path, os.fstat(handle.fileno()))
        raw = handle.read()
    return _parse(path, raw)


def _check_private(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise IdentityError(
            "identity-file-not-regular",
            f"identity file {path} is not a regular file; move it away and run again",
        )
    if info.st_uid != os.getuid():
        raise IdentityError(
            "identity-file-foreign-owner",
            f"identity file {path} is owned by another user (uid {info.st_uid}); "
            "use a key file you own",
        )
    if info.st_mode & 0o077:
        raise IdentityError(
            "identity-file-not-private",
            f"identity file {path} is readable or writable by group or others "
            f"(mode {stat.S_IMODE(info.st_mode):04o}); run `chmod 600 {path}` "
            "and consider the key exposed",
        )


def _parse(path: Path, raw: bytes) -> Identity:
    def invalid(why: str) -> IdentityError:
        return IdentityError(
            "identity-file-invalid",
            f"identity file {path} is not a valid agentctl identity ({why}); "
            "restore it from a backup or move it away to create a new identity",
        )

    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise invalid("not JSON") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise invalid(f"schema is not {SCHEMA!r}")
    if data.get("version") != VERSION or data.get("keyType") != "Ed25519":
        raise invalid("unsupported version or key type")
    encoded = data.get("secretKey")
    if not isinstance(encoded, str):
        raise invalid("secretKey is missing")
    try:
        secret_key = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        raise invalid("secretKey is not base64url") from None
    if len(secret_key) != 32:
        raise invalid("secretKey is not 32 bytes")
    identity = Identity.from_secret_key(secret_key)
    if "did" in data and data["did"] != identity.did:
        raise invalid("did does not match the key")
    return identity


def _serialize(identity: Identity, secret_key: bytes) -> bytes:
    document = {
        "schema": SCHEMA,
        "version": VERSION,
        "keyType": "Ed25519",
        "secretKey": base64.urlsafe_b64encode(secret_key).rstrip(b"=").decode("ascii"),
        "did": identity.did,
    }
    return (json.dumps(document, indent=2) + "\n").encode("utf-8")


def _publish(path: Path, content: bytes) -> bool:
    """Write content to path crash-safely; False when another writer got there first."""
    directory = path.parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = directory / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        # link() never replaces an existing file, unlike rename(): first writer wins
        try:
            os.link(temp, path)
        except FileExistsError:
            return False
    finally:
        temp.unlink(missing_ok=True)
    _fsync_directory(directory)
    return True


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

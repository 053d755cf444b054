"""Ed25519 (through `cryptography`) against RFC 8032, did:key naming, and the private identity file."""

from __future__ import annotations

import json
import os
import stat
import threading

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from lib.fabric import identity
from lib.fabric.identity import (
    Identity,
    IdentityError,
    base58btc,
    did_key,
    load_or_create_identity,
)

# RFC 8032 section 7.1, TEST 1-3: secret key, public key, message, signature
RFC8032 = [
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
        "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
        "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac"
        "18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
    ),
]


def verifies(public: bytes, message: bytes, signature: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except InvalidSignature:
        return False
    return True


@pytest.mark.parametrize("secret, public, message, signature", RFC8032)
def test_rfc8032_secret_keys_give_the_published_public_keys_and_signatures(
    secret, public, message, signature
):
    # the path identity.py takes: secret key -> public key -> signature, bit for bit
    me = Identity.from_secret_key(bytes.fromhex(secret))
    assert me.public_key.hex() == public
    assert me.sign(bytes.fromhex(message)).hex() == signature
    assert verifies(bytes.fromhex(public), bytes.fromhex(message), bytes.fromhex(signature))


def test_a_signature_does_not_verify_for_another_message_or_key():
    secret, public, message, signature = (bytes.fromhex(v) for v in RFC8032[1])
    assert not verifies(public, message + b"!", signature)
    other_public = bytes.fromhex(RFC8032[2][1])
    assert not verifies(other_public, message, signature)
    tampered = signature[:-1] + bytes([signature[-1] ^ 1])
    assert not verifies(public, message, tampered)


def test_a_secret_key_of_another_length_is_refused():
    with pytest.raises(ValueError):
        Identity.from_secret_key(bytes(31))


def test_base58btc_matches_known_encodings_and_keeps_leading_zero_bytes():
    assert base58btc(b"Hello World!") == "2NEpo7TZRRrLZSi2U"
    assert base58btc(bytes.fromhex("0000287fb4cd")) == "11233QC4"
    assert base58btc(b"") == ""


def test_the_did_key_of_rfc8032_test_1_is_the_multicodec_ed25519_form():
    public = bytes.fromhex(RFC8032[0][1])
    did = did_key(public)
    assert did == "did:key:z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw"
    # every Ed25519 did:key starts with z6Mk: the ED 01 multicodec prefix
    assert did_key(bytes.fromhex(RFC8032[1][1])).startswith("did:key:z6Mk")


def test_first_use_creates_a_private_identity_that_later_loads_unchanged(tmp_path):
    path = tmp_path / "state" / "agentctl" / "identity.json"
    created = load_or_create_identity(path)
    assert created.did.startswith("did:key:z6Mk")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["identity.json"]
    stored = json.loads(path.read_text())
    assert stored["did"] == created.did and stored["keyType"] == "Ed25519"
    loaded = load_or_create_identity(path)
    assert loaded == created
    assert did_key(loaded.public_key) == loaded.did


def test_an_identity_signs_messages_that_verify_under_its_public_key(tmp_path):
    me = load_or_create_identity(tmp_path / "id.json")
    signature = me.sign(b"claim command 7")
    assert verifies(me.public_key, b"claim command 7", signature)
    assert not verifies(me.public_key, b"claim command 8", signature)
    assert load_or_create_identity(tmp_path / "id.json").sign(b"claim command 7") == signature
    assert "secret" not in repr(me).lower()


def test_processes_racing_to_create_an_identity_end_with_the_same_one(tmp_path):
    path = tmp_path / "id.json"
    barrier = threading.Barrier(4)
    results: list[Identity] = []

    def create() -> None:
        barrier.wait()
        results.append(load_or_create_identity(path))

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({r.did for r in results}) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["id.json"]


def test_a_symlinked_identity_file_is_refused(tmp_path):
    real = tmp_path / "real.json"
    load_or_create_identity(real)
    link = tmp_path / "id.json"
    link.symlink_to(real)
    with pytest.raises(IdentityError) as caught:
        load_or_create_identity(link)
    assert caught.value.code == "identity-file-symlink"
    assert str(link) in caught.value.message


def test_a_group_readable_identity_file_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "id.json"
    load_or_create_identity(path)
    path.chmod(0o640)
    with pytest.raises(IdentityError) as caught:
        load_or_create_identity(path)
    assert caught.value.code == "identity-file-not-private"
    assert f"chmod 600 {path}" in caught.value.message


def test_an_identity_file_owned_by_another_user_is_refused_fake_uid(tmp_path, monkeypatch):
    path = tmp_path / "id.json"
    load_or_create_identity(path)
    # a real chown needs root; pretending to be another user shows the same check
    monkeypatch.setattr(identity.os, "getuid", lambda: os.stat(path).st_uid + 1)
    with pytest.raises(IdentityError) as caught:
        load_or_create_identity(path)
    assert caught.value.code == "identity-file-foreign-owner"
    assert str(path) in caught.value.message


def test_a_corrupt_identity_file_is_reported_and_never_replaced(tmp_path):
    path = tmp_path / "id.json"
    path.write_text("{not json")
    path.chmod(0o600)
    with pytest.raises(IdentityError) as caught:
        load_or_create_identity(path)
    assert caught.value.code == "identity-file-invalid"
    assert str(path) in caught.value.message
    assert path.read_text() == "{not json"


def test_an_identity_file_whose_did_does_not_match_its_key_is_refused(tmp_path):
    path = tmp_path / "id.json"
    load_or_create_identity(path)
    stored = json.loads(path.read_text())
    stored["did"] = did_key(bytes.fromhex(RFC8032[0][1]))
    path.write_text(json.dumps(stored))
    with pytest.raises(IdentityError) as caught:
        load_or_create_identity(path)
    assert caught.value.code == "identity-file-invalid"


def test_an_identity_that_cannot_be_created_says_where_and_why(tmp_path):
    (tmp_path / "a-file").write_text("")
    path = tmp_path / "a-file" / "id.json"  # its directory cannot exist
    with pytest.raises(IdentityError) as caught:
        load_or_create_identity(path)
    assert caught.value.code == "identity-file-uncreatable"
    assert str(path) in caught.value.message

"""SCRAM-SHA-256 / SCRAM-SHA-512, server side (RFC 5802, RFC 7677), as Kafka's ScramSaslServer runs it.

Only salted credentials are kept (salt, StoredKey, ServerKey, iterations), computed once at start
with PBKDF2 (hashlib.pbkdf2_hmac); proofs are checked with HMAC and constant-time comparison. No
channel binding (Kafka has none either). An unknown user gets a made-up salt and a key nothing
matches, so the exchange looks the same as for a known user with a wrong password.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096
INVALID_CREDENTIALS = "invalid credentials"


class ScramFailure(Exception):
    """The exchange failed; the text is safe to send to the client (never contains secrets)."""


@dataclass(frozen=True, repr=False)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"ScramCredential(iterations={self.iterations})"


def _hmac(hash_name: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hash_name).digest()


def make_credential(password: str, mechanism: str, iterations: int = MIN_ITERATIONS,
                    salt: bytes | None = None) -> ScramCredential:
    hash_name = MECHANISMS[mechanism]
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)
    client_key = _hmac(hash_name, salted, b"Client Key")
    return ScramCredential(salt, hashlib.new(hash_name, client_key).digest(),
                           _hmac(hash_name, salted, b"Server Key"), iterations)


def decode_saslname(text: str) -> str:
    """RFC 5802 saslname: ',' and '=' travel as '=2C' and '=3D'; any other '=' is malformed."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "=":
            code = text[i + 1:i + 3]
            if code not in ("2C", "3D"):
                raise ScramFailure("malformed user name in client-first-message")
            out.append("," if code == "2C" else "=")
            i += 3
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _attributes(message: str, what: str) -> list[tuple[str, str]]:
    pairs = []
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ScramFailure(f"malformed {what}")
        pairs.append((key, value))
    return pairs


@dataclass
class ScramServer:
    """One exchange: client-first -> server-first, client-final -> server-final."""

    mechanism: str
    lookup: Callable[[str], ScramCredential | None]
    fake: Callable[[str], ScramCredential]
    username: str | None = None
    complete: bool = False
    _state: int = 0
    _credential: ScramCredential | None = field(default=None, repr=False)
    _gs2_header: str = ""
    _client_first_bare: str = ""
    _server_first: str = ""
    _nonce: str = ""

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramFailure("SCRAM message is not UTF-8") from None
        if self._state == 0:
            return self._client_first(text)
        if self._state == 1:
            return self._client_final(text)
        raise ScramFailure("unexpected SCRAM message after the exchange completed")

    def _client_first(self, text: str) -> bytes:
        cbind, authzid, bare = (text.split(",", 2) + ["", ""])[:3]
        if cbind.startswith("p="):
            raise ScramFailure("channel binding is not supported")
        if cbind not in ("n", "y") or (authzid and not authzid.startswith("a=")):
            raise ScramFailure("malformed client-first-message")
        attrs = _attributes(bare, "client-first-message")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise ScramFailure("malformed client-first-message")
        if any(k == "m" for k, _ in attrs):
            raise ScramFailure("mandatory SCRAM extensions are not supported")
        if any(k == "tokenauth" for k, _ in attrs[2:]):
            raise ScramFailure("delegation tokens are not supported")
        username = decode_saslname(attrs[0][1])
        if authzid and decode_saslname(authzid[2:]) != username:
            raise ScramFailure("authorization id differs from the user name")
        self.username = username
        self._credential = self.lookup(username) or self.fake(username)
        self._gs2_header = f"{cbind},{authzid},"
        self._client_first_bare = bare
        self._nonce = attrs[1][1] + secrets.token_urlsafe(24)
        c = self._credential
        self._server_first = f"r={self._nonce},s={base64.b64encode(c.salt).decode()},i={c.iterations}"
        self._state = 1
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        attrs = _attributes(without_proof, "client-final-message") if sep else []
        if len(attrs) < 2 or attrs[0][0] != "c" or attrs[1][0] != "r":
            raise ScramFailure("malformed client-final-message")
        if attrs[0][1] != base64.b64encode(self._gs2_header.encode()).decode():
            raise ScramFailure("channel binding data does not match the client-first-message")
        if attrs[1][1] != self._nonce:
            raise ScramFailure("nonce does not match the server-first-message")
        assert self._credential is not None
        hash_name = MECHANISMS[self.mechanism]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        if not self._proof_ok(hash_name, proof_b64, auth_message):
            raise ScramFailure(INVALID_CREDENTIALS)
        self._state = 2
        self.complete = True
        signature = _hmac(hash_name, self._credential.server_key, auth_message)
        return b"v=" + base64.b64encode(signature)

    def _proof_ok(self, hash_name: str, proof_b64: str, auth_message: bytes) -> bool:
        assert self._credential is not None
        try:
            proof = base64.b64decode(proof_b64, validate=True)
        except (binascii.Error, ValueError):
            return False
        stored_key = self._credential.stored_key
        if len(proof) != len(stored_key):
            return False
        signature = _hmac(hash_name, stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        return hmac.compare_digest(hashlib.new(hash_name, client_key).digest(), stored_key)

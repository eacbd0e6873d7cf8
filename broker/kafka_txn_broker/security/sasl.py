"""SASL mechanisms the broker serves: PLAIN (RFC 4616) and SCRAM-SHA-256/512, over users from the config.

`sasl.users` holds `name:password` pairs. At start each password becomes salted SCRAM credentials
(one per enabled mechanism; PLAIN logins are checked against a SHA-256 one), and the passwords are
not kept. Failures carry a message for the client that never contains the password, and the same
message for an unknown user as for a wrong password.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Iterable, Mapping
from typing import Protocol

from kafka_txn_broker.security.scram import (
    INVALID_CREDENTIALS,
    MECHANISMS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramFailure,
    ScramServer,
    make_credential,
)

PLAIN = "PLAIN"
SUPPORTED = (PLAIN, *MECHANISMS)
_PLAIN_HASH = "SCRAM-SHA-256"  # the credential PLAIN passwords are checked against


class SaslFailure(Exception):
    """Authentication failed; the text is what the client is told."""


class SaslServer(Protocol):
    @property
    def username(self) -> str | None: ...

    @property
    def complete(self) -> bool: ...

    def evaluate(self, token: bytes) -> bytes | Awaitable[bytes]: ...


def parse_users(entries: Iterable[str]) -> dict[str, str]:
    """`name:password` items -> {name: password}. Errors name the entry by position, never its text."""
    users: dict[str, str] = {}
    for i, entry in enumerate(entries, 1):
        name, sep, password = entry.strip().partition(":")
        if not sep or not name.strip() or not password:
            raise ValueError(f"sasl.users entry #{i} must look like name:password")
        users[name.strip()] = password
    return users


class CredentialStore:
    def __init__(self, users: Mapping[str, str], mechanisms: Iterable[str], iterations: int = MIN_ITERATIONS) -> None:
        if iterations < MIN_ITERATIONS:
            raise ValueError(f"sasl.scram.iterations must be at least {MIN_ITERATIONS}")
        self.iterations = iterations
        self.user_count = len(users)
        wanted = {m for m in mechanisms if m in MECHANISMS} | ({_PLAIN_HASH} if PLAIN in mechanisms else set())
        self._scram = {m: {u: make_credential(p, m, iterations) for u, p in users.items()} for m in wanted}
        # Made-up salts for unknown users are stable per name, so probing twice reveals nothing.
        self._fake_secret = secrets.token_bytes(32)

    def __repr__(self) -> str:
        return f"CredentialStore(mechanisms={sorted(self._scram)}, users={self.user_count})"

    def scram(self, mechanism: str, username: str) -> ScramCredential | None:
        return self._scram.get(mechanism, {}).get(username)

    def fake(self, username: str) -> ScramCredential:
        salt = hmac.new(self._fake_secret, username.encode("utf-8"), hashlib.sha256).digest()
        return ScramCredential(salt, secrets.token_bytes(64), secrets.token_bytes(64), self.iterations)

    def check_plain(self, username: str, password: str) -> bool:
        known = self.scram(_PLAIN_HASH, username)
        cred = known or self.fake(username)
        # Hash even for unknown users so the answer takes as long either way.
        attempt = make_credential(password, _PLAIN_HASH, cred.iterations, cred.salt)
        return hmac.compare_digest(attempt.stored_key, cred.stored_key) and known is not None


class PlainServer:
    """RFC 4616: one message `authzid NUL authcid NUL passwd`, answered with nothing."""

    def __init__(self, store: CredentialStore) -> None:
        self.store = store
        self.username: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslFailure("Authentication failed: PLAIN message must be authzid NUL username NUL password")
        try:
            authzid, username, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise SaslFailure("Authentication failed: PLAIN message is not UTF-8") from None
        if not username or not password:
            raise SaslFailure("Authentication failed: username and password must not be empty")
        if authzid and authzid != username:
            raise SaslFailure("Authentication failed: authorization id differs from the username")
        self.username = username
        if not self.store.check_plain(username, password):
            raise SaslFailure(f"Authentication failed: {INVALID_CREDENTIALS} for SASL mechanism {PLAIN}")
        self.complete = True
        return b""


class _ScramAdapter:
    """ScramServer with its failures turned into SaslFailure, as the session expects."""

    def __init__(self, mechanism: str, store: CredentialStore) -> None:
        self._server = ScramServer(mechanism, lambda u: store.scram(mechanism, u), store.fake)
        self.mechanism = mechanism

    @property
    def username(self) -> str | None:
        return self._server.username

    @property
    def complete(self) -> bool:
        return self._server.complete

    def evaluate(self, token: bytes) -> bytes:
        try:
            return self._server.evaluate(token)
        except ScramFailure as exc:
            raise SaslFailure(f"Authentication failed: {exc} for SASL mechanism {self.mechanism}") from None


def new_server(mechanism: str, store: CredentialStore) -> SaslServer:
    if mechanism == PLAIN:
        return PlainServer(store)
    return _ScramAdapter(mechanism, store)

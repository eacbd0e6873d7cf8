"""Security of a cluster (listener protocol, TLS, SASL users, the authorizer) and of each connection.

`ClusterSecurity.from_config` reads the broker config once at start and fails with a ConfigError that
names the property to fix. Every node of the cluster uses the one `security.protocol`.

An `AuthSession` follows one connection through Kafka's SASL sequence: ApiVersions (optional),
SaslHandshake (v1: SaslAuthenticate requests follow; v0: raw length-prefixed tokens follow), then
SaslAuthenticate until the mechanism completes. Mechanisms: PLAIN and SCRAM over `sasl.users` (sasl.py),
GSSAPI with the broker's keytab (gssapi.py), OAUTHBEARER with the identity provider's JWKS (oauthbearer.py).
Anything else before that closes the connection, and so does a failed authentication once its
SASL_AUTHENTICATION_FAILED answer is sent.

Session lifetime (KIP-368), as Kafka's SaslServerAuthenticator grants it: the credential's remaining lifetime
when the mechanism knows it (OAUTHBEARER: the token's `exp`), capped by `connections.max.reauth.ms` when that is
positive; the reauth ms alone for a mechanism without one (PLAIN, SCRAM, GSSAPI: Kafka reads no ticket end
time); none at all (0, the session never expires) when neither applies. SaslAuthenticate v1+ tells the client;
a v0 client is not told, yet its session ends alike. A client re-authenticates on the same connection with a new
SaslHandshake (same mechanism, same principal; at most once a second); a request other than SaslHandshake after
its session expired closes the connection unanswered (apis/request_handler.py), as Kafka's SocketServer does.
Every answer here was compared with real Kafka's (tests/external/real_kafka/test_reauth_real.py).
"""

from __future__ import annotations

import inspect
import logging
import ssl
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_txn_broker.clock import SYSTEM_CLOCK, Clock
from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.security.acl_store import AclStore
from kafka_txn_broker.security.acls import AclError, parse_acl
from kafka_txn_broker.security.authorizer import AclAuthorizer
from kafka_txn_broker.security.gssapi import KerberosError
from kafka_txn_broker.security.oauthbearer import TokenRejected
from kafka_txn_broker.security.sasl import SUPPORTED, CredentialStore, SaslFailure, SaslServer, new_server, parse_users

if TYPE_CHECKING:
    from kafka_txn_broker.security.gssapi import KerberosSettings
    from kafka_txn_broker.security.oauthbearer import Jwks, OAuthSettings

log = logging.getLogger(__name__)

ANONYMOUS = "User:ANONYMOUS"
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
AUTHORIZERS = ("kafka.security.authorizer.AclAuthorizer", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
               "kafka.security.auth.SimpleAclAuthorizer", "acl")



@dataclass(frozen=True)
class ClusterSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanisms: tuple[str, ...] = ()
    credentials: CredentialStore | None = None
    authorizer: AclAuthorizer | None = None
    # Largest frame accepted before authentication (Kafka's sasl.server.max.receive.size).
    max_unauthenticated_frame: int = 524288
    kerberos: KerberosSettings | None = None
    kerberos_credentials: Any = None  # the broker's acceptor credentials (gssapi.Credentials)
    oauth: OAuthSettings | None = None
    jwks: Jwks | None = None
    clock: Clock = SYSTEM_CLOCK
    # KIP-368's connections.max.reauth.ms: the longest a SASL session lasts without re-authentication (0: no cap).
    max_reauth_ms: int = 0

    @property
    def sasl_enabled(self) -> bool:
        return self.protocol.startswith("SASL_")

    @classmethod
    def from_config(cls, cfg: BrokerConfig, data_dir: Path, clock: Clock = SYSTEM_CLOCK) -> ClusterSecurity:
        protocol = cfg["security.protocol"]
        ssl_context = None
        if protocol in ("SSL", "SASL_SSL"):
            from kafka_txn_broker.security.tls import server_context

            ssl_context = server_context(cfg)
        mechanisms, credentials = _sasl(cfg) if protocol.startswith("SASL_") else ((), None)
        kerberos = oauth = jwks = creds = None
        if GSSAPI in mechanisms:
            from kafka_txn_broker.security.gssapi import KerberosSettings

            kerberos = KerberosSettings.from_config(cfg)
            creds = kerberos.acceptor_credentials()
        if OAUTHBEARER in mechanisms:
            from kafka_txn_broker.security.oauthbearer import Jwks, OAuthSettings

            oauth = OAuthSettings.from_config(cfg)
            jwks = Jwks(oauth.jwks_url, oauth.refresh_ms, clock)
        return cls(protocol, ssl_context, mechanisms, credentials, _authorizer(cfg, data_dir),
                   cfg["sasl.server.max.receive.size"], kerberos, creds, oauth, jwks, clock,
                   cfg["connections.max.reauth.ms"])

    def new_session(self, peer_host: str, peer_cert: dict[str, Any] | None) -> AuthSession:
        from kafka_txn_broker.security.tls import principal_from_cert

        principal = principal_from_cert(peer_cert) if self.ssl_context is not None else None
        return AuthSession(self, peer_host, principal or ANONYMOUS)


GSSAPI = "GSSAPI"
OAUTHBEARER = "OAUTHBEARER"
MECHANISMS = (*SUPPORTED, GSSAPI, OAUTHBEARER)


def _sasl(cfg: BrokerConfig) -> tuple[tuple[str, ...], CredentialStore | None]:
    mechanisms = tuple(m.strip().upper() for m in cfg["sasl.enabled.mechanisms"].split(",") if m.strip())
    unsupported = [m for m in mechanisms if m not in MECHANISMS]
    if unsupported or not mechanisms:
        raise ConfigError(f"sasl.enabled.mechanisms: {', '.join(unsupported) or 'none given'} not supported; "
                          f"use any of {', '.join(MECHANISMS)}")
    if not set(mechanisms) & set(SUPPORTED):
        return mechanisms, None  # GSSAPI and OAUTHBEARER need no users
    try:
        users = parse_users(cfg["sasl.users"])
        if not users:
            raise ValueError(f"security.protocol={cfg['security.protocol']} needs users: set sasl.users "
                             "to a list of name:password")
        return mechanisms, CredentialStore(users, mechanisms, cfg["sasl.scram.iterations"])
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _authorizer(cfg: BrokerConfig, data_dir: Path) -> AclAuthorizer | None:
    name = cfg["authorizer.class.name"].strip()
    if not name:
        if cfg["authorizer.acls"]:
            raise ConfigError("authorizer.acls is set but no authorizer is: set authorizer.class.name=acl")
        return None
    if name not in AUTHORIZERS:
        raise ConfigError(f"authorizer.class.name={name} is not available: use {AUTHORIZERS[0]} (or 'acl')")
    super_users = [u.strip() for u in cfg["super.users"].split(";") if u.strip()]
    try:
        static = [parse_acl(spec) for spec in cfg["authorizer.acls"]]
        return AclAuthorizer(super_users, cfg["allow.everyone.if.no.acl.found"], static, AclStore(data_dir))
    except AclError as exc:
        raise ConfigError(f"authorizer.acls: {exc}") from None


_FAILURES = (SaslFailure, KerberosError, TokenRejected)
MIN_REAUTH_INTERVAL_MS = 1000  # Kafka's: a client re-authenticates at most once a second


class AuthSession:
    """One connection's authentication state; handlers and the connection loop consult it (on the broker's
    event loop only)."""

    def __init__(self, security: ClusterSecurity, peer_host: str, principal: str) -> None:
        self.security = security
        self.peer_host = peer_host
        self.principal = principal
        self.authenticated = not security.sasl_enabled
        self.raw_tokens = False  # after SaslHandshake v0, tokens come as bare length-prefixed frames
        self.close_after_response = False
        self._server: SaslServer | None = None  # the exchange under way, if any
        self._mechanism = ""
        self._reauthenticating = False
        # KIP-368: when the session ends (broker clock, ms), if a lifetime was granted; when the last
        # re-authentication began; a re-authentication that switched mechanism (closed at its next token).
        self.session_expires_ms: int | None = None
        self._reauth_started_ms: int | None = None
        self.drop_at_next_token = False

    @property
    def max_frame(self) -> int | None:
        return None if self.authenticated else self.security.max_unauthenticated_frame

    @property
    def exchanging(self) -> bool:
        """A SASL exchange is under way (an authentication, or a re-authentication of a live session)."""
        return self._server is not None

    def expired(self) -> bool:
        """The session's lifetime has passed without a re-authentication: its next request closes it."""
        return self.session_expires_ms is not None and self.security.clock.millis() >= self.session_expires_ms

    def handshake(self, mechanism: str, version: int) -> tuple[int, list[str]]:
        enabled = list(self.security.mechanisms)
        if not self.security.sasl_enabled:
            return E.ILLEGAL_SASL_STATE, enabled  # Kafka's answer on a listener without SASL
        if self.authenticated and self._server is None and not self._reauthenticating:
            return self._reauthentication(mechanism, version, enabled)
        if self._server is not None or self._reauthenticating:
            self.close_after_response = True  # an exchange already under way
            return E.ILLEGAL_SASL_STATE, enabled
        if mechanism not in enabled:
            self.close_after_response = True
            return E.UNSUPPORTED_SASL_MECHANISM, enabled
        self._begin(mechanism, version)
        return E.NONE, enabled

    def _reauthentication(self, mechanism: str, version: int, enabled: list[str]) -> tuple[int, list[str]]:
        """A SaslHandshake on an authenticated connection: a re-authentication (KIP-368) when the session has a
        lifetime and the last one began at least MIN_REAUTH_INTERVAL_MS ago; otherwise Kafka handles it as an
        ordinary request, refused (ILLEGAL_SASL_STATE, no mechanisms) on a connection that stays open."""
        now = self.security.clock.millis()
        too_soon = self._reauth_started_ms is not None and now - self._reauth_started_ms < MIN_REAUTH_INTERVAL_MS
        if self.session_expires_ms is None or version == 0 or too_soon:
            return E.ILLEGAL_SASL_STATE, []
        self._reauth_started_ms = now
        self._reauthenticating = True
        if mechanism != self._mechanism:
            # Kafka answers the handshake, then closes the connection at the next token, unanswered.
            log.info("refused re-authentication from %s: SASL %s in place of %s", self.peer_host, mechanism,
                     self._mechanism)
            self.drop_at_next_token = True
            return E.NONE, enabled
        self._begin(mechanism, version)
        return E.NONE, enabled

    def _begin(self, mechanism: str, version: int) -> None:
        self._server = self._new_server(mechanism)
        self._mechanism = mechanism
        self.raw_tokens = version == 0

    def _new_server(self, mechanism: str) -> SaslServer:
        security = self.security
        if mechanism == GSSAPI:
            from kafka_txn_broker.security.gssapi import GssapiServer

            assert security.kerberos is not None
            return GssapiServer(security.kerberos, security.kerberos_credentials)
        if mechanism == OAUTHBEARER:
            from kafka_txn_broker.security.oauthbearer import OAuthBearerServer

            assert security.oauth is not None and security.jwks is not None
            return OAuthBearerServer(security.oauth, security.jwks, security.clock)
        assert security.credentials is not None
        return new_server(mechanism, security.credentials)

    async def authenticate(self, token: bytes) -> tuple[int, str | None, bytes, int]:
        """(error code, error message, challenge, session lifetime ms) for one SaslAuthenticate request (v1 and
        later carry the lifetime to the client)."""
        server = self._server
        if server is None or self.raw_tokens:
            self.close_after_response = True
            return E.ILLEGAL_SASL_STATE, "SaslAuthenticate is only valid after a SaslHandshake v1", b"", 0
        try:
            answer = server.evaluate(token)
            challenge = await answer if inspect.isawaitable(answer) else answer
            if server.complete:
                self._complete(server)
        except _FAILURES as exc:
            self.close_after_response = True
            text = str(exc) if isinstance(exc, SaslFailure) else f"Authentication failed: {exc}"
            what = "re-authentication" if self._reauthenticating else "authentication"
            log.info("failed %s from %s with SASL %s (user %r): %s", what, self.peer_host, self._mechanism,
                     server.username, text)
            return E.SASL_AUTHENTICATION_FAILED, text, b"", 0
        lifetime = self._grant(server) if server.complete else 0
        return E.NONE, None, challenge, lifetime

    async def raw_token(self, token: bytes) -> bytes | None:
        """A SaslHandshake v0 token: the framed answer, or None to close (v0 has no error answer)."""
        self.raw_tokens = False
        code, _, challenge, _ = await self.authenticate(token)
        if code != E.NONE:
            return None
        self.close_after_response = False
        self.raw_tokens = not self.authenticated
        return struct.pack(">i", len(challenge)) + challenge

    def _complete(self, server: SaslServer) -> None:
        assert server.username is not None
        principal = f"User:{server.username}"
        if self._reauthenticating and principal != self.principal:
            # Kafka's words, its principals written type.name
            raise SaslFailure(f"Cannot change principals during re-authentication from "
                              f"{self.principal.replace(':', '.', 1)}: {principal.replace(':', '.', 1)}")
        self.principal = principal
        self.authenticated = True
        self._server = None
        log.debug("%s %sauthenticated as %s with SASL %s", self.peer_host,
                  "re-" if self._reauthenticating else "", self.principal, self._mechanism)
        self._reauthenticating = False

    def _grant(self, server: SaslServer) -> int:
        """KIP-368's session lifetime (module docstring); sets when the session expires. 0: it never does.
        As Kafka, whatever the SaslAuthenticate version: a v0 client is not told, but its session ends too."""
        self.session_expires_ms = None
        now = self.security.clock.millis()
        expires: int | None = getattr(server, "credential_expires_ms", None)
        cap = self.security.max_reauth_ms
        if expires is None and cap <= 0:
            return 0
        lifetimes = [x for x in (expires - now if expires is not None else None, cap if cap > 0 else None)
                     if x is not None]
        lifetime = max(0, min(lifetimes))
        self.session_expires_ms = now + lifetime
        return lifetime

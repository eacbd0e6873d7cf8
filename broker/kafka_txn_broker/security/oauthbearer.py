"""SASL/OAUTHBEARER (RFC 7628) on the broker side: JWT access tokens checked as KIP-768's broker does.

Kafka's broker settings (`OAuthSettings.from_config`):

    sasl.enabled.mechanisms=OAUTHBEARER
    listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=\\
        org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;
    listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class=\\
        org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
    sasl.oauthbearer.jwks.endpoint.url=https://idp.example.com/jwks
    sasl.oauthbearer.expected.issuer=https://idp.example.com
    sasl.oauthbearer.expected.audience=kafka

A token is accepted when its signature verifies with the JWKS key its `kid` names (RS*, PS*, ES* and
EdDSA, checked with `cryptography`), it has not expired (`exp`, within sasl.oauthbearer.clock.skew.seconds
of the broker's clock), is already valid (`nbf`, `iat`), has the expected `iss` and an expected `aud`,
and carries the sub claim (sasl.oauthbearer.sub.claim.name), which becomes the principal `User:<sub>`.
The JWKS is fetched on first use, again after sasl.oauthbearer.jwks.endpoint.refresh.ms, and at once
for an unknown key id (at most every MIN_REFETCH_MS).

A refusal names its cause (expired, signature, issuer, audience, an unreachable JWKS endpoint) and is
sent at once as SASL_AUTHENTICATION_FAILED. Neither the token nor any part of it is ever logged or sent.

Threading: one `Jwks` per cluster, used from the broker's event loop; fetching runs on a worker thread
(`asyncio.to_thread`) so a slow provider never stalls other connections.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_txn_broker.clock import SYSTEM_CLOCK, Clock
from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError

OAUTHBEARER = "OAUTHBEARER"
VALIDATOR = "OAuthBearerValidatorCallbackHandler"
MIN_REFETCH_MS = 10_000
FETCH_TIMEOUT_S = 10.0


class TokenRejected(Exception):
    """The token or the message carrying it is not acceptable; the text is what the client is told."""


@dataclass(frozen=True)
class OAuthSettings:
    jwks_url: str
    refresh_ms: int
    issuer: str
    audience: tuple[str, ...]
    sub_claim: str
    skew_s: int

    @classmethod
    def from_config(cls, cfg: BrokerConfig) -> OAuthSettings:
        protocol = cfg["security.protocol"].lower()
        handler_key = f"listener.name.{protocol}.oauthbearer.sasl.server.callback.handler.class"
        handler = cfg[handler_key].strip()
        if handler and handler.rsplit(".", 1)[-1] != VALIDATOR:
            raise ConfigError(f"{handler_key}={handler} is not available: use "
                              f"org.apache.kafka.common.security.oauthbearer.{VALIDATOR}")
        jaas_key = f"listener.name.{protocol}.oauthbearer.sasl.jaas.config"
        jaas = cfg[jaas_key].strip()
        if jaas and "OAuthBearerLoginModule" not in jaas.split(" ", 1)[0]:
            raise ConfigError(f"{jaas_key} must use org.apache.kafka.common.security.oauthbearer."
                              "OAuthBearerLoginModule required;")
        url = cfg["sasl.oauthbearer.jwks.endpoint.url"].strip()
        if not url:
            raise ConfigError("sasl.enabled.mechanisms has OAUTHBEARER: set sasl.oauthbearer.jwks.endpoint.url to "
                              "the identity provider's JWKS (tokens are checked against its keys)")
        if urllib.parse.urlparse(url).scheme not in ("https", "http", "file"):
            raise ConfigError(f"sasl.oauthbearer.jwks.endpoint.url={url} is not an https:, http: or file: URL")
        return cls(url, cfg["sasl.oauthbearer.jwks.endpoint.refresh.ms"], cfg["sasl.oauthbearer.expected.issuer"],
                   tuple(cfg["sasl.oauthbearer.expected.audience"]), cfg["sasl.oauthbearer.sub.claim.name"],
                   cfg["sasl.oauthbearer.clock.skew.seconds"])


# ---- JWKS ---------------------------------------------------------------------------------------------
class Jwks:
    """The provider's public keys by key id, fetched lazily and refreshed (see the module docstring)."""

    def __init__(self, url: str, refresh_ms: int, clock: Clock = SYSTEM_CLOCK) -> None:
        self.url = url
        self._refresh_ms = refresh_ms
        self._clock = clock
        self._keys: dict[str, Any] = {}
        self._fetched_ms: int | None = None
        self._lock = asyncio.Lock()

    async def key(self, kid: str | None) -> tuple[str, Any]:
        """(kid, public key) for `kid` (the only key when the token names none); TokenRejected otherwise."""
        async with self._lock:
            now = self._clock.millis()
            stale = self._fetched_ms is None or now - self._fetched_ms >= self._refresh_ms
            unknown = kid is not None and kid not in self._keys
            if stale or (unknown and now - (self._fetched_ms or 0) >= MIN_REFETCH_MS):
                self._keys = await asyncio.to_thread(fetch_jwks, self.url)
                self._fetched_ms = now
        if kid is None:
            if len(self._keys) != 1:
                raise TokenRejected(f"the token names no key (kid) and the JWKS at {self.url} has "
                                    f"{len(self._keys)} keys")
            return next(iter(self._keys.items()))
        if kid not in self._keys:
            raise TokenRejected(f"the token is signed with key {kid!r}, which is not in the JWKS at {self.url}")
        return kid, self._keys[kid]


def fetch_jwks(url: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as answer:  # noqa: S310 - the configured URL
            document = json.loads(answer.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise TokenRejected(f"the broker could not fetch the JWKS from {url} (HTTP {exc.code}): check "
                            "sasl.oauthbearer.jwks.endpoint.url") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise TokenRejected(f"the broker could not fetch the JWKS from {url} ({getattr(exc, 'reason', exc)}): check "
                            "sasl.oauthbearer.jwks.endpoint.url and that the identity provider is up") from None
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise TokenRejected(f"the JWKS at {url} has no \"keys\" list")
    out: dict[str, Any] = {}
    for jwk in keys:
        if isinstance(jwk, dict) and jwk.get("use", "sig") == "sig":
            public = public_key(jwk)
            if public is not None:
                out[str(jwk.get("kid", ""))] = public
    return out


def _b64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _int(text: str) -> int:
    return int.from_bytes(_b64(text), "big")


def public_key(jwk: Mapping[str, Any]) -> Any:
    """A `cryptography` public key from a JWK (RSA, EC P-256/384/521, OKP Ed25519); None for other kinds."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    kty = jwk.get("kty")
    try:
        if kty == "RSA":
            return rsa.RSAPublicNumbers(_int(jwk["e"]), _int(jwk["n"])).public_key()
        if kty == "EC":
            curve = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1(), "P-521": ec.SECP521R1()}[jwk["crv"]]
            return ec.EllipticCurvePublicNumbers(_int(jwk["x"]), _int(jwk["y"]), curve).public_key()
        if kty == "OKP" and jwk.get("crv") == "Ed25519":
            return ed25519.Ed25519PublicKey.from_public_bytes(_b64(jwk["x"]))
    except (KeyError, ValueError):
        return None
    return None


# ---- the token ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Jwt:
    header: dict[str, Any]
    claims: dict[str, Any]
    signed: bytes      # header.payload, the bytes the signature covers
    signature: bytes

    @classmethod
    def parse(cls, token: str) -> Jwt:
        parts = token.split(".")
        if len(parts) != 3 or not parts[2]:
            raise TokenRejected("the token is not a signed JWT (header.payload.signature)")
        try:
            header, claims = json.loads(_b64(parts[0])), json.loads(_b64(parts[1]))
            signature = _b64(parts[2])
        except ValueError:
            raise TokenRejected("the token is not a JWT: its parts are not base64url JSON") from None
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise TokenRejected("the token is not a JWT: its header and payload must be JSON objects")
        return cls(header, claims, f"{parts[0]}.{parts[1]}".encode("ascii"), signature)


def verify_signature(jwt: Jwt, key: Any, kid: str, url: str) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils

    alg = str(jwt.header.get("alg", ""))
    digest = {"256": hashes.SHA256(), "384": hashes.SHA384(), "512": hashes.SHA512()}.get(alg[2:])
    try:
        if alg[:2] in ("RS", "PS") and digest is not None and isinstance(key, rsa.RSAPublicKey):
            pad = (padding.PKCS1v15() if alg[:2] == "RS" else
                   padding.PSS(mgf=padding.MGF1(digest), salt_length=digest.digest_size))
            key.verify(jwt.signature, jwt.signed, pad, digest)
        elif alg[:2] == "ES" and digest is not None and isinstance(key, ec.EllipticCurvePublicKey):
            half = len(jwt.signature) // 2
            der = utils.encode_dss_signature(int.from_bytes(jwt.signature[:half], "big"),
                                             int.from_bytes(jwt.signature[half:], "big"))
            key.verify(der, jwt.signed, ec.ECDSA(digest))
        elif alg == "EdDSA" and isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(jwt.signature, jwt.signed)
        else:
            raise TokenRejected(f"the token's algorithm {alg or 'none'} does not fit key {kid!r} of the JWKS at "
                                f"{url} (RS*, PS*, ES* and EdDSA tokens are accepted)")
    except InvalidSignature:
        raise TokenRejected(f"the token's signature does not verify with key {kid!r} of the JWKS at {url}: it was "
                            "not signed by this identity provider") from None


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def check_claims(claims: Mapping[str, Any], settings: OAuthSettings, now_s: float) -> str:
    """The principal's name (the sub claim) of a token whose claims are acceptable now; TokenRejected otherwise."""
    exp = claims.get("exp")
    if not isinstance(exp, int | float):
        raise TokenRejected("the token has no expiry (exp claim)")
    if exp + settings.skew_s <= now_s:
        raise TokenRejected(f"the token expired at {_iso(exp)} (exp), {int(now_s - exp)} s ago by the broker's clock: "
                            "the client must fetch a new one")
    for name in ("nbf", "iat"):
        value = claims.get(name)
        if isinstance(value, int | float) and value - settings.skew_s > now_s:
            raise TokenRejected(f"the token is not valid before {_iso(value)} ({name}) by the broker's clock: "
                                "check the clocks of the identity provider and the broker")
    if settings.issuer and claims.get("iss") != settings.issuer:
        raise TokenRejected(f"the token's issuer (iss) is {claims.get('iss')!r}, not "
                            f"sasl.oauthbearer.expected.issuer {settings.issuer!r}")
    if settings.audience:
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else list(aud) if isinstance(aud, list) else []
        if not set(audiences) & set(settings.audience):
            raise TokenRejected(f"the token's audience (aud) {audiences} includes none of "
                                f"sasl.oauthbearer.expected.audience {list(settings.audience)}")
    subject = claims.get(settings.sub_claim)
    if not isinstance(subject, str) or not subject.strip():
        raise TokenRejected(f"the token has no {settings.sub_claim!r} claim (sasl.oauthbearer.sub.claim.name) to "
                            "name the principal")
    return subject


def parse_message(message: bytes) -> str:
    """The bearer token of an RFC 7628 client message `gs2-header ^A auth=Bearer <token> ^A ... ^A^A`."""
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError:
        raise TokenRejected("the OAUTHBEARER message is not UTF-8") from None
    header, sep, rest = text.partition("\x01")
    if not sep or not header.startswith(("n,", "y,")) or not rest.endswith("\x01\x01"):
        raise TokenRejected("the OAUTHBEARER message is not RFC 7628's (gs2 header, ^A-separated key=value pairs)")
    fields = dict(kv.partition("=")[::2] for kv in rest[:-2].split("\x01") if kv)
    scheme, _, token = fields.get("auth", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise TokenRejected("the OAUTHBEARER message has no auth=Bearer <token>")
    return token.strip()


class OAuthBearerServer:
    """One connection's exchange: a single client message, answered with nothing or refused."""

    def __init__(self, settings: OAuthSettings, jwks: Jwks, clock: Clock = SYSTEM_CLOCK) -> None:
        self._settings = settings
        self._jwks = jwks
        self._clock = clock
        self.username: str | None = None
        self.complete = False
        # The token's exp in ms: the credential's end, which caps the session's lifetime (KIP-368).
        self.credential_expires_ms: int | None = None

    async def evaluate(self, message: bytes) -> bytes:
        jwt = Jwt.parse(parse_message(message))
        kid = jwt.header.get("kid")
        found, key = await self._jwks.key(str(kid) if kid is not None else None)
        verify_signature(jwt, key, found, self._jwks.url)
        self.username = check_claims(jwt.claims, self._settings, self._clock.millis() / 1000)
        self.credential_expires_ms = int(float(jwt.claims["exp"]) * 1000)
        self.complete = True
        return b""

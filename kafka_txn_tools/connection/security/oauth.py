"""SASL/OAUTHBEARER from Java client properties: a token provider for kafka-python's mechanism.

The properties a Java admin client uses (KIP-768):

    sasl.mechanism=OAUTHBEARER
    sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler
    sasl.oauthbearer.token.endpoint.url=https://idp.example.com/oauth2/token   (or file:/path/to/token.jwt)
    sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \\
        clientId="kafka-admin" clientSecret="..." scope="kafka" extension_logicalCluster="lkc-1";

With a token endpoint, the OAuth 2 client credentials grant is used (HTTP Basic with clientId and
clientSecret; Kafka 4.1's sasl.oauthbearer.client.credentials.client.id / .client.secret and
sasl.oauthbearer.scope properties work too); a `file:` URL names a file holding the token, re-read
when it expires. Without an endpoint, Kafka's unsecured development tokens
(`unsecuredLoginStringClaim_sub="admin"`) are built here as Kafka's
OAuthBearerUnsecuredLoginCallbackHandler builds them. `extension_<name>` (and
`unsecuredLoginExtension_<name>`) options become SASL extensions.

Tokens are fetched once before connecting, so a wrong secret or an unreachable endpoint is reported
at once and by name, then reused until they near their expiry: REFRESH_MARGIN_S before it, or the last fifth
of their lifetime when that is shorter (Kafka's sasl.login.refresh.window.factor, 0.8), so that a short-lived
token is renewed too. The next use then fetches a new one: a connection's login, or kafka-python's
re-authentication of a live connection (KIP-368), which the broker asks for before the session's token
expires. A refresh that fails while the current token is still valid keeps that token (and tries again
after RETRY_S); once it has expired, the failure is raised, naming the endpoint and when the token expired.
The token's subject (sasl.oauthbearer.sub.claim.name, `sub` by default) is the principal the audit log
records. A token is never printed or logged.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka.net.sasl.oauth import AbstractTokenProvider

from kafka_txn_tools.connection.security.redact import protect
from kafka_txn_tools.errors import ConfigError, ConnectionFailed

if TYPE_CHECKING:
    from kafka_txn_tools.connection.security.jaas import JaasConfig

REFRESH_MARGIN_S = 30.0  # fetch a new token this long before the current one expires (at most)
REFRESH_WINDOW = 0.8  # or once this part of its lifetime has passed, if that comes first
RETRY_S = 1.0  # after a failed refresh, the current token is used this long before trying again
DEFAULT_LIFETIME_S = 3600
LOGIN_FAILED = "LOGIN_FAILED"  # the monitor's cause for a credential it cannot get


class TokenProvider(AbstractTokenProvider):
    """Fetches and caches access tokens; `token()` is called by kafka-python on its I/O thread."""

    def __init__(self, endpoint: str | None, client_id: str | None, client_secret: str | None,
                 scope: str | None, extensions: dict[str, str], unsecured_sub: str | None = None,
                 timeout_s: float = 10.0, urlencode_header: bool = False, sub_claim: str = "sub",
                 now: Callable[[], float] = time.time) -> None:
        self.endpoint = endpoint
        self._client_id = client_id
        self._client_secret = client_secret
        self._scope = scope
        self._extensions = extensions
        self._unsecured_sub = unsecured_sub
        self._timeout_s = timeout_s
        self._urlencode = urlencode_header
        self._sub_claim = sub_claim
        self._now = now
        self.fetches = 0
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires_at = 0.0
        self._refresh_at = 0.0
        self.problem: str | None = None  # why the last refresh failed, while the current token still serves

    def __repr__(self) -> str:  # never the secret or the token
        return f"TokenProvider(endpoint={self.endpoint!r}, client_id={self._client_id!r})"

    def token(self) -> str:
        """The current token, fetched anew near its expiry (module docstring). Called by kafka-python on its
        I/O thread and by the caller's thread; one fetch at a time."""
        with self._lock:
            now = self._now()
            if self._token is not None and now < self._refresh_at:
                return self._token
            try:
                token, lifetime = self._fetch()
            except ConnectionFailed as exc:
                if self._token is not None and now < self._expires_at:
                    self.problem = str(exc)
                    self._refresh_at = min(now + RETRY_S, self._expires_at)
                    return self._token
                if self._token is not None:
                    raise ConnectionFailed(f"{exc.message} (the last token expired at {_iso(self._expires_at)})",
                                           exc.fix, cause=exc.cause) from None
                raise
            protect([token])  # kafka-python logs what it sends at DEBUG
            self._token, self.problem = token, None
            # The broker goes by the token's exp (second-granular, so up to a second before now + expires_in).
            exp = _jwt_claims(token).get("exp")
            lifetime = min(lifetime, float(exp) - now) if isinstance(exp, int | float) else lifetime
            self._expires_at = now + lifetime
            self._refresh_at = self._expires_at - min(REFRESH_MARGIN_S, (1 - REFRESH_WINDOW) * lifetime)
            self.fetches += 1
            return token

    def subject(self) -> str | None:
        """The current token's subject claim (read, not verified: the broker verifies), if it has one."""
        value = _jwt_claims(self.token()).get(self._sub_claim)
        return value if isinstance(value, str) else None

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)

    def _fetch(self) -> tuple[str, float]:
        if self.endpoint is None:
            return unsecured_token(self._unsecured_sub or "", DEFAULT_LIFETIME_S), DEFAULT_LIFETIME_S
        if self.endpoint.startswith("file:"):
            return _token_from_file(urllib.parse.urlparse(self.endpoint).path)
        return self._client_credentials()

    def _client_credentials(self) -> tuple[str, float]:
        assert self.endpoint is not None
        form = {"grant_type": "client_credentials", **({"scope": self._scope} if self._scope else {})}
        user, secret = self._client_id or "", self._client_secret or ""
        if self._urlencode:
            user, secret = urllib.parse.quote(user), urllib.parse.quote(secret)
        basic = base64.b64encode(f"{user}:{secret}".encode()).decode()
        request = urllib.request.Request(
            self.endpoint, data=urllib.parse.urlencode(form).encode(), method="POST",
            headers={"Authorization": f"Basic {basic}", "Accept": "application/json",
                     "Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as answer:  # noqa: S310 - the user's URL
                body = json.loads(answer.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            raise ConnectionFailed(
                f"the OAuth token endpoint {self.endpoint} refused the client credentials of {self._client_id} "
                f"(HTTP {exc.code}{_oauth_error(exc)})", "check clientId and clientSecret in sasl.jaas.config",
                cause=LOGIN_FAILED) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConnectionFailed(f"could not get a token from the OAuth token endpoint {self.endpoint}: {reason}",
                                   "check sasl.oauthbearer.token.endpoint.url and that the identity provider is up",
                                   cause=LOGIN_FAILED) from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise ConnectionFailed(f"the OAuth token endpoint {self.endpoint} answered without an access_token",
                                   cause=LOGIN_FAILED)
        return token, float(body.get("expires_in") or DEFAULT_LIFETIME_S)


def _oauth_error(exc: urllib.error.HTTPError) -> str:
    """`: invalid_client` from an RFC 6749 error answer (its error code only: descriptions are free text)."""
    try:
        body = json.loads(exc.read().decode("utf-8"))
    except (OSError, ValueError):
        return ""
    code = body.get("error") if isinstance(body, dict) else None
    return f": {code}" if isinstance(code, str) and code.replace("_", "").isalnum() else ""


def _token_from_file(path: str) -> tuple[str, float]:
    try:
        token = open(path, encoding="utf-8").read().strip()  # noqa: SIM115 - read once
    except OSError as exc:
        raise ConfigError(f"sasl.oauthbearer.token.endpoint.url names {path}, which cannot be read: "
                          f"{exc.strerror}") from None
    claims = _jwt_claims(token)
    expires = claims.get("exp")
    lifetime = float(expires) - time.time() if isinstance(expires, int | float) else DEFAULT_LIFETIME_S
    return token, max(lifetime, REFRESH_MARGIN_S + 1)


def _jwt_claims(token: str) -> dict[str, Any]:
    try:
        payload = token.split(".")[1]
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def unsecured_token(subject: str, lifetime_s: float, now: float | None = None) -> str:
    """An unsigned JWS (alg none) as Kafka's unsecured login handler makes for development clusters."""
    issued = time.time() if now is None else now
    return f"{_b64({'alg': 'none'})}.{_b64({'sub': subject, 'iat': issued, 'exp': issued + lifetime_s})}."


def token_provider(take: Any, jaas: JaasConfig | None, source: str) -> TokenProvider:
    """The provider for sasl.mechanism=OAUTHBEARER; configuration errors name the property."""
    options = dict(jaas.options) if jaas is not None else {}
    for option, key in (("clientId", "sasl.oauthbearer.client.credentials.client.id"),
                        ("clientSecret", "sasl.oauthbearer.client.credentials.client.secret"),
                        ("scope", "sasl.oauthbearer.scope")):
        value = take(key)
        if value and not options.get(option):
            options[option] = value
    sub_claim = take("sasl.oauthbearer.sub.claim.name") or "sub"
    endpoint = take("sasl.oauthbearer.token.endpoint.url")
    take("sasl.login.callback.handler.class")
    extensions = {k.split("_", 1)[1]: v for k, v in options.items()
                  if k.startswith(("extension_", "unsecuredLoginExtension_"))}
    timeout_ms = take("sasl.login.read.timeout.ms") or take("sasl.login.connect.timeout.ms")
    timeout_s = int(timeout_ms) / 1000 if timeout_ms and timeout_ms.isdigit() else 10.0
    if endpoint:
        if not endpoint.startswith(("https:", "http:", "file:")):
            raise ConfigError(f"sasl.oauthbearer.token.endpoint.url={endpoint} in {source} is not an http(s) "
                              "or file: URL")
        if not endpoint.startswith("file:") and not (options.get("clientId") and options.get("clientSecret")):
            raise ConfigError(f"sasl.mechanism=OAUTHBEARER in {source} needs clientId and clientSecret for the "
                              "token endpoint",
                              'set sasl.jaas.config=...OAuthBearerLoginModule required clientId="..." '
                              'clientSecret="...";')
        return TokenProvider(endpoint, options.get("clientId"), options.get("clientSecret"), options.get("scope"),
                             extensions, timeout_s=timeout_s,
                             urlencode_header=(take("sasl.oauthbearer.header.urlencode") or "").lower() == "true",
                             sub_claim=sub_claim)
    subject = options.get("unsecuredLoginStringClaim_sub")
    if not subject:
        raise ConfigError(
            f"sasl.mechanism=OAUTHBEARER in {source} needs a token source",
            "set sasl.oauthbearer.token.endpoint.url (with clientId and clientSecret in sasl.jaas.config), or "
            'for a development cluster unsecuredLoginStringClaim_sub="<user>" in sasl.jaas.config')
    return TokenProvider(None, None, None, None, extensions, unsecured_sub=subject)

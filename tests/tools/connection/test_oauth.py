"""SASL/OAUTHBEARER and GSSAPI from Java client properties (connection/security/oauth.py and
kerberos.py).

The token endpoint is a real HTTP server on localhost speaking the OAuth 2 client credentials grant;
the SASL message is built by kafka-python's own OAUTHBEARER mechanism from our provider.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_txn_tools.connection.config import settings_from_properties
from kafka_txn_tools.connection.security.oauth import TokenProvider, unsecured_token
from kafka_txn_tools.errors import ConfigError, ConnectionFailed
from tests.support.tiers import require

JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="kafka-admin" '
        'clientSecret="S3cret-oauth" scope="kafka" extension_logicalCluster="lkc-1";')


class TokenEndpoint(http.server.BaseHTTPRequestHandler):
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        user, _, secret = base64.b64decode(self.headers["Authorization"].split()[1]).decode().partition(":")
        TokenEndpoint.requests.append({"form": body, "user": user})
        ok = (user, secret) == ("kafka-admin", "S3cret-oauth") and body["grant_type"] == ["client_credentials"]
        answer = json.dumps({"access_token": "tok-123", "token_type": "bearer", "expires_in": 3600} if ok
                            else {"error": "invalid_client"}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TokenEndpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/oauth2/token"
    server.shutdown()


def oauth_props(url: str, jaas: str = JAAS) -> dict[str, str]:
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": jaas,
            "sasl.oauthbearer.token.endpoint.url": url, "ssl.truststore.location": str(_ca()),
            "sasl.login.callback.handler.class":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"}


def _ca() -> Path:
    from tests.broker.security.support import certificates

    return certificates().ca


def test_client_credentials_become_kafka_pythons_oauthbearer_message(endpoint: str) -> None:
    from kafka.net.sasl.oauth import SaslMechanismOAuth

    settings = settings_from_properties(oauth_props(endpoint))
    provider = settings.kwargs["sasl_oauth_token_provider"]
    assert settings.warnings == [] and "S3cret-oauth" not in repr(settings)
    TokenEndpoint.requests.clear()
    message = SaslMechanismOAuth(sasl_oauth_token_provider=provider).auth_bytes()
    assert message == b"n,,\x01auth=Bearer tok-123\x01logicalCluster=lkc-1\x01\x01"
    assert provider.token() == "tok-123" and len(TokenEndpoint.requests) == 1  # fetched once, then reused
    assert TokenEndpoint.requests[0] == {"form": {"grant_type": ["client_credentials"], "scope": ["kafka"]},
                                         "user": "kafka-admin"}


def test_a_refused_secret_is_named_without_the_secret(endpoint: str) -> None:
    provider = settings_from_properties(oauth_props(endpoint, JAAS.replace("S3cret-oauth", "wrong-7")))
    refused = r"refused the client credentials of kafka-admin \(HTTP 401: invalid_client\)"
    with pytest.raises(ConnectionFailed, match=refused) as exc:
        provider.kwargs["sasl_oauth_token_provider"].token()
    assert "wrong-7" not in str(exc.value) and "clientSecret" in str(exc.value)
    dead = TokenProvider("http://127.0.0.1:1/token", "a", "b", None, {}, timeout_s=2)
    with pytest.raises(ConnectionFailed, match="could not get a token from the OAuth token endpoint"):
        dead.token()


def test_unsecured_and_file_tokens(tmp_path: Path) -> None:
    token = unsecured_token("admin", 60, now=1000.0)
    header, claims, signature = token.split(".")
    decode = lambda part: json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # noqa: E731
    assert decode(header) == {"alg": "none"} and signature == ""
    assert decode(claims) == {"sub": "admin", "iat": 1000.0, "exp": 1060.0}
    unsecured = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                 'unsecuredLoginStringClaim_sub="ops";')
    dev = settings_from_properties({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                                    "sasl.jaas.config": unsecured})
    assert decode(dev.kwargs["sasl_oauth_token_provider"].token().split(".")[1])["sub"] == "ops"
    saved = tmp_path / "token.jwt"
    saved.write_text(token + "\n")
    from_file = TokenProvider(f"file:{saved}", None, None, None, {})
    assert from_file.token() == token


@pytest.mark.parametrize("jaas, message", [
    ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required scope="x";', "clientId and"),
    ("org.apache.kafka.common.security.plain.PlainLoginModule required username=a password=b;",
     "uses PlainLoginModule but sasl.mechanism is OAUTHBEARER"),
])
def test_oauth_configuration_errors_name_the_property(endpoint: str, jaas: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_from_properties(oauth_props(endpoint, jaas))


def test_gssapi_maps_the_jaas_options_to_a_login(tmp_path: Path) -> None:
    """The login itself runs against a real KDC in tests/e2e/test_auth_kerberos.py."""
    require("gssapi")
    from kafka_txn_tools.connection.security.jaas import parse_jaas
    from kafka_txn_tools.connection.security.kerberos import apply_gssapi

    keytab = tmp_path / "admin.keytab"
    keytab.write_bytes(b"\x05\x02")
    jaas = parse_jaas(f'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="{keytab}" '
                      'principal="admin@EXAMPLE.COM";')
    props = {"sasl.kerberos.service.name": "kafka-prod"}
    kw: dict[str, Any] = {}
    env: dict[str, str] = {}
    login = apply_gssapi(props.get, jaas, kw, "admin.properties", environ=env)
    assert kw == {"sasl_kerberos_service_name": "kafka-prod"}
    # kafka-python's mechanism takes the default credentials: the keytab's, in a memory cache of this process
    assert env["KRB5_CLIENT_KTNAME"] == str(keytab) and env["KRB5CCNAME"].startswith("MEMORY:kafka-txn-")
    assert (login.service, login.keytab, login.principal, login.ticket_cache) == (
        "kafka-prod", keytab, "admin@EXAMPLE.COM", None)
    missing = parse_jaas('com.sun.security.auth.module.Krb5LoginModule required keyTab="/nope.keytab";')
    with pytest.raises(ConfigError, match="keyTab /nope.keytab .* does not exist"):
        apply_gssapi(props.get, missing, {}, "admin.properties", environ={})

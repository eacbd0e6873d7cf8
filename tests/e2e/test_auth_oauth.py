"""OAuth end to end: panva's oidc-provider issues client-credentials JWTs, the embedded broker on SASL_SSL with
OAUTHBEARER checks them against the provider's JWKS (docs/security-auth.md's broker block), and both CLIs
use the page's client properties.

Every command finds and clears a real incident; ACLs apply to the token's subject; the audit log records
it; expired, wrongly signed, wrong-audience tokens and unreachable endpoints each get their own one-line
error; no token ever shows in output, logs or the audit log.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.testing.scenarios import HangingTransaction
from kafka_txn_tools.cli import exit_codes
from tests.broker.security.oidc import Provider
from tests.broker.security.support import certificates
from tests.e2e.auth_support import (
    audit_lines,
    broker_block,
    cli,
    doc_block,
    every_command,
    incident_on_disk,
    offsets,
    rehearse,
    secure_config,
)
from tests.e2e.test_cli_connecting import closed_port

FAST_S = 20.0


def broker_config(oidc: Provider, jwks_url: str | None = None) -> dict[str, Any]:
    cfg = secure_config(**broker_block("oauth-broker", {
        "/etc/kafka/broker.pem": str(certificates().server),
        "https://idp.example.com/jwks": jwks_url or oidc.jwks_url, "https://idp.example.com": oidc.issuer,
        "User:kafka-ops": "User:kafka-admin"}))
    cfg["sasl.enabled.mechanisms"] += ",SCRAM-SHA-512"  # the tests' own checks log in as admin with SCRAM
    cfg["super.users"] += ";User:admin"
    cfg["authorizer.acls"] = ["User:kafka-reader ALLOW Read Topic orders PREFIXED",
                              "User:kafka-reader ALLOW Describe TransactionalId orders PREFIXED"]
    return cfg


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory, oidc: Provider
             ) -> Iterator[tuple[EmbeddedCluster, list[HangingTransaction]]]:
    data = tmp_path_factory.mktemp("oauth")
    hangs = incident_on_disk(data, 3)
    with EmbeddedCluster(nodes=1, data_dir=data, config=broker_config(oidc)) as c:
        yield c, hangs


def client_properties(tmp_path: Path, oidc: Provider, client_id: str, secret: str | None = None,
                      endpoint: str | None = None, name: str | None = None) -> Path:
    text = doc_block("oauth-client", {
        "https://idp.example.com/token": endpoint or oidc.token_endpoint, "kafka-ops": client_id,
        "change-me": secret or oidc.clients[client_id].client_secret, "/etc/kafka/ca.pem": str(certificates().ca)})
    path = tmp_path / f"{name or client_id}.properties"
    path.write_text(text)
    return path


def test_every_command_of_both_front_ends(incident: tuple[EmbeddedCluster, list[HangingTransaction]],
                                         oidc: Provider, tmp_path: Path, _private_audit_log: Path) -> None:
    cluster, hangs = incident
    config = client_properties(tmp_path, oidc, "kafka-admin")
    every_command(cluster.bootstrap_servers, config, hangs, _private_audit_log, "kafka-admin")


def test_a_rehearsal_runs_on_the_oauth_cluster(incident: tuple[EmbeddedCluster, list[HangingTransaction]],
                                               oidc: Provider, tmp_path: Path) -> None:
    cluster, _ = incident
    rehearse(cluster.bootstrap_servers, client_properties(tmp_path, oidc, "kafka-admin"))


def test_acls_apply_to_the_tokens_subject(incident: tuple[EmbeddedCluster, list[HangingTransaction]],
                                          oidc: Provider, tmp_path: Path, _private_audit_log: Path) -> None:
    """kafka-reader's tokens make it User:kafka-reader: it may read and describe, not write markers."""
    cluster, hangs = incident
    h, bs = hangs[2], cluster.bootstrap_servers
    config = client_properties(tmp_path, oidc, "kafka-reader")
    found = cli("kafka-txn", bs, "find-hanging", "--all", "-o", "json", config=config)
    assert found.code == 0 and (h.topic, h.partition) in {(r["topic"], r["partition"])
                                                          for r in found.json()["hanging"]}, found.err
    before = offsets(bs, h)
    where = ["--topic", h.topic, "--partition", str(h.partition), "--start-offset", str(h.start_offset)]
    refused = cli("kafka-txn", bs, "abort", *where, "--yes", config=config)
    assert refused.code == exit_codes.ERROR and "CLUSTER_AUTHORIZATION_FAILED" in refused.err, refused.err
    assert offsets(bs, h) == before
    assert audit_lines(_private_audit_log)[-1]["principal"] == "kafka-reader"


def forged_token(oidc: Provider) -> str:
    """A token with the provider's key id, issuer and audience, signed by a key the provider never had."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    kid = oidc.jwks()["keys"][0]["kid"]
    now = int(time.time())
    signed = (f"{part({'alg': 'RS256', 'typ': 'at+jwt', 'kid': kid})}."
              f"{part({'sub': 'kafka-admin', 'iss': oidc.issuer, 'aud': 'kafka', 'iat': now, 'exp': now + 300})}")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    signature = key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signed}.{base64.urlsafe_b64encode(signature).decode().rstrip('=')}"


def no_token_anywhere(texts: list[str]) -> None:
    # A JWT's header is base64url JSON: it starts with "eyJ" ('{"'). No such string may leak.
    for text in texts:
        assert "eyJ" not in text, text


@pytest.mark.parametrize("case", ["wrong secret", "token endpoint unreachable", "wrong audience", "wrongly signed"])
def test_each_oauth_failure_is_one_line_at_once(incident: tuple[EmbeddedCluster, list[HangingTransaction]],
                                                oidc: Provider, tmp_path: Path, case: str, _private_audit_log: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    bs = incident[0].bootstrap_servers
    dead = f"http://127.0.0.1:{closed_port()}/token"
    token_file = tmp_path / "token.jwt"
    token_file.write_text(forged_token(oidc))
    config, expected = {
        "wrong secret": (client_properties(tmp_path, oidc, "kafka-admin", secret="Wrong-Secret-5x", name="secret"),
                         f"the OAuth token endpoint {oidc.token_endpoint} refused the client credentials of "
                         "kafka-admin (HTTP 401: invalid_client)"),
        "token endpoint unreachable": (client_properties(tmp_path, oidc, "kafka-admin", endpoint=dead, name="dead"),
                                       f"could not get a token from the OAuth token endpoint {dead}: "),
        "wrong audience": (client_properties(tmp_path, oidc, "other-app"),
                           "refused SASL/OAUTHBEARER authentication (Authentication failed: the token's audience "
                           "(aud) ['other-service'] includes none of sasl.oauthbearer.expected.audience ['kafka'])"),
        "wrongly signed": (client_properties(tmp_path, oidc, "kafka-admin", endpoint=f"file:{token_file}",
                                             name="forged"),
                           "refused SASL/OAUTHBEARER authentication (Authentication failed: the token's signature "
                           f"does not verify with key 'kafka-txn-test-rs256' of the JWKS at {oidc.jwks_url}: it "
                           "was not signed by this identity provider)"),
    }[case]
    started = time.monotonic()
    # abort, so that the audit log records the failure too; the partition is one the incident left hanging
    h = incident[1][2]
    r = cli("kafka-txn", bs, "abort", "--topic", h.topic, "--partition", str(h.partition), "--start-offset",
            str(h.start_offset), "--yes", config=config)
    assert time.monotonic() - started < FAST_S
    assert r.code == exit_codes.ERROR and r.err.count("error: ") == 1 and "Traceback" not in r.err, r.err
    assert expected in r.err
    assert "Wrong-Secret-5x" not in r.err + caplog.text
    no_token_anywhere([r.out, r.err, caplog.text, _private_audit_log.read_text()])


@pytest.mark.parametrize("case", ["expired", "JWKS endpoint unreachable"])
def test_the_broker_refuses_by_name(oidc: Provider, tmp_path: Path, case: str,
                                    caplog: pytest.LogCaptureFixture) -> None:
    """The broker's clock (injectable) past the token's exp, or a JWKS endpoint nobody answers."""
    caplog.set_level(logging.DEBUG)
    clock = ManualClock(int(time.time() * 1000))
    dead = f"http://127.0.0.1:{closed_port()}/jwks"
    config = broker_config(oidc, jwks_url=dead if case != "expired" else None)
    with EmbeddedCluster(nodes=1, data_dir=tmp_path / "kafka", config=config, clock=clock) as c:
        if case == "expired":
            clock.advance((300 + 30 + 1) * 1000)  # the provider's 300 s lifetime and the 30 s clock skew allowed
        r = cli("kafka-txn", c.bootstrap_servers, "find-hanging", "--all",
                config=client_properties(tmp_path, oidc, "kafka-admin"))
    assert r.code == exit_codes.ERROR and r.err.count("error: ") == 1, r.err
    expected = ("Authentication failed: the token expired at " if case == "expired" else
                f"Authentication failed: the broker could not fetch the JWKS from {dead} (")
    assert f"refused SASL/OAUTHBEARER authentication ({expected}" in r.err
    no_token_anywhere([r.out, r.err, caplog.text])


def test_the_cli_caches_its_token_and_fetches_a_new_one_before_it_expires(
        incident: tuple[EmbeddedCluster, list[HangingTransaction]], oidc: Provider) -> None:
    from kafka_txn_tools.connection.client import AdminClient
    from kafka_txn_tools.connection.config import settings_from_properties
    from kafka_txn_tools.connection.security.oauth import REFRESH_MARGIN_S, TokenProvider

    now = [1000.0]
    client = oidc.clients["kafka-admin"]
    provider = TokenProvider(oidc.token_endpoint, client.client_id, client.client_secret, "kafka", {},
                             now=lambda: now[0])
    settings = settings_from_properties({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
                                         "sasl.oauthbearer.token.endpoint.url": oidc.token_endpoint,
                                         "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
                                                             'OAuthBearerLoginModule required clientId="x" '
                                                             'clientSecret="y";',
                                         "ssl.truststore.location": str(certificates().ca)})
    settings.bootstrap_servers = incident[0].bootstrap_servers
    settings.kwargs["sasl_oauth_token_provider"] = provider
    with AdminClient(settings, timeout_ms=20_000) as admin:
        assert admin.metadata([]).brokers and admin.principal == "kafka-admin"
    first = provider.token()
    assert provider.fetches == 1  # one token for every connection of the command
    now[0] += 300 - REFRESH_MARGIN_S - 1
    assert provider.token() == first and provider.fetches == 1
    now[0] += 2  # within REFRESH_MARGIN_S of its expiry: the next connection gets a new token
    second = provider.token()
    assert second != first and provider.fetches == 2
    with AdminClient(settings, timeout_ms=20_000) as admin:
        assert admin.metadata([]).brokers  # the broker accepts the new token

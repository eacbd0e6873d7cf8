"""KIP-368 on the broker: the session lifetime SaslAuthenticate v1+ grants, re-authentication on the same
connection, and an expired session closed at its next request. Time is the broker's injectable clock.

What Kafka's SaslServerAuthenticator does is the reference (tests/external/real_kafka/test_reauth_real.py runs
the wire dialogues against real Kafka too): `connections.max.reauth.ms` caps every session (0, the default: no
cap); an OAUTHBEARER session ends at its token's exp whatever the cap; a v0 client is not told its lifetime but
its session ends alike; a re-authentication keeps its mechanism and principal, at most once a second.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from kafka.protocol.metadata import MetadataResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.security.auth import ANONYMOUS, AuthSession, ClusterSecurity
from kafka_txn_broker.security.oauthbearer import Jwks, OAuthSettings
from tests.broker.security.support import USERS, broker_config, call
from tests.broker.security.test_auth import METADATA, closed
from tests.broker.security.test_oauthbearer import ISSUER, NOW_S, jwk, message, sign
from tests.broker.wire import connect, recv_frame, send_request

REAUTH_MS = 60_000


@pytest.fixture(scope="module")
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, clock: ManualClock) -> Iterator[EmbeddedCluster]:
    cfg = broker_config("SASL_PLAINTEXT", **{"connections.max.reauth.ms": REAUTH_MS})
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("reauth"), config=cfg, clock=clock) as c:
        c.create_topic("t", 1, 1)
        yield c


def plain(s: socket.socket, user: str, mechanism: str = "PLAIN", version: int = 2) -> Any:
    """SaslHandshake v1 and one SaslAuthenticate of `version` with `user`'s PLAIN password: its answer (the
    handshake's if that refused; None if the connection closed instead of answering)."""
    send_request(s, SaslHandshakeRequest[1](mechanism=mechanism), 1)
    hs = SaslHandshakeResponse.decode(recv_frame(s), version=1, header=True)
    if hs.error_code:
        return hs
    send_request(s, SaslAuthenticateRequest[version](auth_bytes=f"\0{user}\0{USERS[user]}".encode()), 2)
    try:
        return SaslAuthenticateResponse.decode(recv_frame(s), version=version, header=True)
    except ConnectionError:
        return None


def test_the_lifetime_granted_and_the_close_after_it(cluster: EmbeddedCluster, clock: ManualClock) -> None:
    with connect(cluster.bootstrap_servers) as s:
        answer = plain(s, "alice")
        assert answer.error_code == 0 and answer.session_lifetime_ms == REAUTH_MS
        clock.advance(REAUTH_MS - 1)
        assert call(s, METADATA, MetadataResponse).topics  # still within its lifetime
        clock.advance(1)
        send_request(s, METADATA, 9)
        assert closed(s)  # unanswered: the session expired without re-authentication


def test_re_authentication_on_the_same_connection_extends_the_session(cluster: EmbeddedCluster,
                                                                      clock: ManualClock) -> None:
    with connect(cluster.bootstrap_servers) as s:
        assert plain(s, "alice").session_lifetime_ms == REAUTH_MS
        clock.advance(REAUTH_MS // 2)
        again = plain(s, "alice")  # before it expires
        assert again.error_code == 0 and again.session_lifetime_ms == REAUTH_MS
        clock.advance(REAUTH_MS // 2 + 1)  # past the first session's end, within the second's
        assert call(s, METADATA, MetadataResponse).topics
        clock.advance(REAUTH_MS)
        late = plain(s, "alice")  # after it expired: a SaslHandshake still re-authenticates (Kafka's order)
        assert late.error_code == 0 and late.session_lifetime_ms == REAUTH_MS
        assert call(s, METADATA, MetadataResponse).topics


def test_re_authentication_keeps_its_principal_and_mechanism(cluster: EmbeddedCluster) -> None:
    with connect(cluster.bootstrap_servers) as s:
        assert plain(s, "alice").error_code == 0
        refused = plain(s, "bob")
        assert refused.error_code == 58
        assert refused.error_message == ("Cannot change principals during re-authentication from User.alice: "
                                         "User.bob")
        assert closed(s)
    with connect(cluster.bootstrap_servers) as s:
        assert plain(s, "alice").error_code == 0
        # Another mechanism: the handshake is answered, the token that follows closes the connection unanswered.
        assert plain(s, "alice", mechanism="SCRAM-SHA-256") is None


def test_re_authentication_at_most_once_a_second(cluster: EmbeddedCluster, clock: ManualClock) -> None:
    with connect(cluster.bootstrap_servers) as s:
        assert plain(s, "alice").error_code == 0
        assert plain(s, "alice").error_code == 0  # the first re-authentication
        clock.advance(999)
        refused = plain(s, "alice")  # too soon: refused as an ordinary request, the connection stays
        assert (refused.error_code, refused.mechanisms) == (34, [])
        assert call(s, METADATA, MetadataResponse).topics
        clock.advance(1)
        assert plain(s, "alice").error_code == 0


def test_a_v0_client_is_not_told_but_its_session_ends_too(cluster: EmbeddedCluster, clock: ManualClock) -> None:
    with connect(cluster.bootstrap_servers) as s:
        assert plain(s, "alice", version=0).error_code == 0  # v0 answers carry no lifetime
        clock.advance(REAUTH_MS)
        send_request(s, METADATA, 9)
        assert closed(s)


def test_no_lifetime_without_connections_max_reauth_ms(tmp_path: Path) -> None:
    clock = ManualClock()
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=broker_config("SASL_PLAINTEXT"), clock=clock) as c, \
            connect(c.bootstrap_servers) as s:
        assert plain(s, "alice").session_lifetime_ms == 0
        clock.advance(86_400_000)
        assert call(s, METADATA, MetadataResponse) is not None
        again = plain(s, "alice")  # nothing to re-authenticate: an ordinary request, refused; the connection stays
        assert (again.error_code, again.mechanisms) == (34, [])
        assert call(s, METADATA, MetadataResponse) is not None


# ---- OAUTHBEARER: the token's exp ends the session --------------------------------------------------------
@pytest.fixture(scope="module")
def key() -> Any:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def oauth_session(tmp_path: Path, key: Any, max_reauth_ms: int) -> tuple[AuthSession, ManualClock]:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk("k1", key)]}))
    clock = ManualClock(NOW_S * 1000)
    settings = OAuthSettings(f"file:{path}", 3_600_000, ISSUER, ("kafka",), "sub", 30)
    security = ClusterSecurity("SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",), oauth=settings,
                               jwks=Jwks(settings.jwks_url, settings.refresh_ms, clock), clock=clock,
                               max_reauth_ms=max_reauth_ms)
    return AuthSession(security, "127.0.0.1", ANONYMOUS), clock


def login(session: AuthSession, token: str) -> tuple[int, str | None, bytes, int]:
    assert session.handshake("OAUTHBEARER", 1)[0] == 0
    return asyncio.run(session.authenticate(message(token)))


@pytest.mark.parametrize("max_reauth_ms, lifetime_ms", [(0, 300_000), (60_000, 60_000), (900_000, 300_000)])
def test_an_oauth_session_ends_at_the_tokens_exp(tmp_path: Path, key: Any, max_reauth_ms: int,
                                                 lifetime_ms: int) -> None:
    """A 300 s token (exp = now + 300): its remaining lifetime, capped by connections.max.reauth.ms if set."""
    session, clock = oauth_session(tmp_path, key, max_reauth_ms)
    code, _, _, lifetime = login(session, sign(key, "RS256", "k1"))
    assert (code, lifetime) == (0, lifetime_ms)
    clock.advance(lifetime_ms - 1)
    assert not session.expired()
    clock.advance(1)
    assert session.expired()
    # A fresh token re-authenticates the session: its lifetime runs from now to the new exp.
    now_s = clock.millis() // 1000
    code, _, _, lifetime = login(session, sign(key, "RS256", "k1", iat=now_s, exp=now_s + 120))
    assert (code, lifetime) == (0, min(120_000, max_reauth_ms or 120_000)) and not session.expired()


def test_an_oauth_token_within_the_clock_skew_past_exp_gets_a_session_already_over(tmp_path: Path,
                                                                                  key: Any) -> None:
    """Accepted (exp + sasl.oauthbearer.clock.skew.seconds is still ahead) but its lifetime is 0: the client
    is told not to re-authenticate, and the broker closes the session at its next request, as Kafka does."""
    session, clock = oauth_session(tmp_path, key, 0)
    clock.advance(310_000)  # 10 s past exp, within the 30 s skew
    code, _, _, lifetime = login(session, sign(key, "RS256", "k1"))
    assert (code, lifetime) == (0, 0) and session.expired()

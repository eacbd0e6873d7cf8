"""KIP-368 side by side: the same raw SASL dialogues against real Apache Kafka and the embedded broker, both with
SASL/PLAIN and connections.max.reauth.ms; every answer must be the same (the embedded broker's own tests, on an
injectable clock, are tests/broker/security/test_reauth.py).

- SaslAuthenticate v2 grants the configured session lifetime (v0 answers carry none);
- a re-authentication on the same connection (same user) succeeds with a new lifetime; one less than a second
  after the last is refused as an ordinary request (the connection stays); one as another user is refused with
  Kafka's message and the connection closed; one with another mechanism is closed at its token, unanswered;
- a request after the session ended, without re-authenticating, closes the connection unanswered, a v0
  client's session too.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from kafka_txn_broker import EmbeddedCluster
from tests.broker.wire import connect, recv_frame, send_request
from tests.external.real_kafka.conftest import RELEASE
from tests.support.real_kafka import KafkaCluster
from tests.support.real_kafka.cluster import free_ports

REAUTH_MS = 2000
USERS = {"admin": "admin-secret", "alice": "alice-secret"}
METADATA = MetadataRequest[8](topics=None, allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                              include_topic_authorized_operations=False)


@contextmanager
def real(libs: Path, base: Path) -> Iterator[str]:
    """One real node with a SASL_PLAINTEXT listener (PLAIN over USERS) beside its own PLAINTEXT one."""
    cluster = KafkaCluster(libs, base, nodes=1, version=RELEASE)
    node = next(iter(cluster.nodes.values()))
    port = free_ports(1)[0]
    users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    cluster.config.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port},"
                     f"SASL_PLAINTEXT://127.0.0.1:{port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_PLAINTEXT://127.0.0.1:{port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "connections.max.reauth.ms": str(REAUTH_MS),
    })
    with cluster:
        yield f"127.0.0.1:{port}"


@contextmanager
def embedded(base: Path) -> Iterator[str]:
    config = {"security.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
              "sasl.users": [f"{u}:{p}" for u, p in USERS.items()], "connections.max.reauth.ms": REAUTH_MS}
    with EmbeddedCluster(nodes=1, data_dir=base, config=config) as cluster:
        yield cluster.bootstrap_servers


def plain(s: socket.socket, user: str, mechanism: str = "PLAIN", version: int = 2) -> tuple[Any, ...]:
    """(handshake error, mechanisms, SaslAuthenticate error or "closed", its message, its session lifetime) for
    `user`'s PLAIN message (sent whatever the mechanism: the broker must refuse a switch before reading it)."""
    send_request(s, SaslHandshakeRequest[1](mechanism=mechanism), 1)
    hs = SaslHandshakeResponse.decode(recv_frame(s), version=1, header=True)
    if hs.error_code:
        return hs.error_code, hs.mechanisms, None, None, None
    send_request(s, SaslAuthenticateRequest[version](auth_bytes=f"\0{user}\0{USERS[user]}".encode()), 2)
    try:
        auth = SaslAuthenticateResponse.decode(recv_frame(s), version=version, header=True)
    except ConnectionError:
        return 0, hs.mechanisms, "closed", None, None
    return 0, hs.mechanisms, auth.error_code, auth.error_message, getattr(auth, "session_lifetime_ms", None)


def metadata_answered(s: socket.socket) -> bool:
    """Whether a Metadata request is answered (False: the connection was closed instead)."""
    send_request(s, METADATA, 9)
    try:
        return MetadataResponse.decode(recv_frame(s), version=8, header=True) is not None
    except (ConnectionError, OSError):
        return False


def closed(s: socket.socket) -> bool:
    """Whether the broker closes the connection within 3 s (it sends nothing unasked)."""
    s.settimeout(3)
    try:
        return s.recv(1) == b""
    except ConnectionError:
        return True
    except TimeoutError:
        return False


def dialogues(address: str) -> dict[str, Any]:
    """Every dialogue of the module docstring on one broker; what it answered."""
    seen: dict[str, Any] = {}
    with connect(address) as s:
        seen["first"] = plain(s, "alice")
        seen["again, same user"] = plain(s, "alice")
        seen["metadata after re-authentication"] = metadata_answered(s)
        seen["again, too soon"] = plain(s, "alice")
        seen["metadata after too soon"] = metadata_answered(s)
        time.sleep(1.1)  # a re-authentication at most once a second
        seen["again, another user"] = plain(s, "admin")
        seen["closed after the refusal"] = closed(s)
    with connect(address) as s:
        plain(s, "alice")
        seen["again, another mechanism"] = plain(s, "alice", mechanism="SCRAM-SHA-256")
        seen["closed after the other mechanism"] = closed(s)
    with connect(address) as expiring, connect(address) as v0:
        plain(expiring, "alice")
        seen["v0"] = plain(v0, "alice", version=0)
        time.sleep(REAUTH_MS / 1000 + 0.5)
        seen["metadata after the session ended"] = metadata_answered(expiring)
        seen["metadata on the v0 session"] = metadata_answered(v0)
    return seen


@pytest.mark.needs("java")
def test_session_lifetime_and_re_authentication_as_kafka(kafka_libs: Path, tmp_path: Path) -> None:
    sides: list[Callable[[], AbstractContextManager[str]]] = [lambda: real(kafka_libs, tmp_path / "real"),
                                                              lambda: embedded(tmp_path / "embedded")]
    answers = []
    for side in sides:
        with side() as address:
            answers.append(dialogues(address))
    kafka, ours = answers
    assert kafka["first"] == (0, ["PLAIN", "SCRAM-SHA-256"], 0, "", REAUTH_MS), kafka  # the reference
    assert ours == kafka, (ours, kafka)

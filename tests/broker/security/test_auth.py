"""Listeners with TLS and SASL over the wire: the SASL state machine, kafka-python clients, mTLS, config errors."""

from __future__ import annotations

import logging
import socket
import ssl
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError
from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.security.auth import ClusterSecurity
from tests.broker.security.support import (
    KEY_PASSWORD,
    USERS,
    broker_config,
    call,
    certificates,
    kafka_python_config,
    sasl_plain_socket,
)
from tests.broker.wire import connect, recv_exact, recv_frame, send_request

METADATA = MetadataRequest[8](topics=None, allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                              include_topic_authorized_operations=False)


@pytest.fixture(scope="module")
def sasl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    cfg = broker_config("SASL_PLAINTEXT")
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("sasl"), config=cfg) as c:
        c.create_topic("t", 1, 1)
        yield c


def closed(s: socket.socket) -> bool:
    s.settimeout(5)
    try:
        return s.recv(1) == b""
    except ConnectionError:
        return True


def handshake(s: socket.socket, mechanism: str, version: int = 1) -> Any:
    send_request(s, SaslHandshakeRequest[version](mechanism=mechanism), 1)
    return SaslHandshakeResponse.decode(recv_frame(s), version=version, header=True)


def authenticate(s: socket.socket, token: bytes) -> Any:
    send_request(s, SaslAuthenticateRequest[2](auth_bytes=token), 2)
    return SaslAuthenticateResponse.decode(recv_frame(s), version=2, header=True)


# ---- the SASL sequence -------------------------------------------------------------------------------
def test_only_api_versions_and_sasl_before_authentication(sasl_cluster: EmbeddedCluster) -> None:
    with connect(sasl_cluster.bootstrap_servers) as s:
        resp = call(s, ApiVersionsRequest[3](client_software_name="t", client_software_version="1"),
                    ApiVersionsResponse)
        assert resp.error_code == 0 and {17, 36} <= {k.api_key for k in resp.api_keys}
        send_request(s, METADATA)
        assert closed(s)


def test_plain_authentication_then_requests_flow(sasl_cluster: EmbeddedCluster) -> None:
    with sasl_plain_socket(sasl_cluster.bootstrap_servers, "alice") as s:
        assert [t.name for t in call(s, METADATA, MetadataResponse).topics] == ["t"]


def test_wrong_password_gets_58_with_a_message_then_close(sasl_cluster: EmbeddedCluster,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="kafka_txn_broker")
    with connect(sasl_cluster.bootstrap_servers) as s:
        assert handshake(s, "PLAIN").error_code == 0
        resp = authenticate(s, b"\0alice\0not-her-password")
        assert resp.error_code == 58
        assert resp.error_message == "Authentication failed: invalid credentials for SASL mechanism PLAIN"
        assert closed(s)
    assert "not-her-password" not in caplog.text and "failed authentication" in caplog.text


def test_unsupported_mechanism_lists_the_enabled_ones_then_closes(sasl_cluster: EmbeddedCluster) -> None:
    with connect(sasl_cluster.bootstrap_servers) as s:
        resp = handshake(s, "GSSAPI")
        assert resp.error_code == 33 and resp.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert closed(s)


def test_authenticate_before_handshake_and_a_second_handshake_are_illegal(sasl_cluster: EmbeddedCluster) -> None:
    with connect(sasl_cluster.bootstrap_servers) as s:
        resp = authenticate(s, b"\0alice\0" + USERS["alice"].encode())
        assert resp.error_code == 34
        assert closed(s)
    with sasl_plain_socket(sasl_cluster.bootstrap_servers, "alice") as s:
        # A session without a lifetime has nothing to re-authenticate (KIP-368): Kafka answers the handshake as
        # any request on an authenticated connection, refused with no mechanisms, and the connection stays.
        resp = handshake(s, "PLAIN")
        assert (resp.error_code, resp.mechanisms) == (34, [])
        assert call(s, METADATA, MetadataResponse).topics


def test_scram_over_saslauthenticate(sasl_cluster: EmbeddedCluster) -> None:
    client = ScramClient("bob", USERS["bob"], "SCRAM-SHA-256")
    with connect(sasl_cluster.bootstrap_servers) as s:
        assert handshake(s, "SCRAM-SHA-256").error_code == 0
        first = authenticate(s, client.first_message())
        client.process_server_first_message(bytes(first.auth_bytes))
        final = authenticate(s, client.final_message())
        assert final.error_code == 0 and final.session_lifetime_ms == 0
        client.process_server_final_message(bytes(final.auth_bytes))
        assert call(s, METADATA, MetadataResponse).topics


def raw_token(s: socket.socket, token: bytes) -> bytes:
    s.sendall(struct.pack(">i", len(token)) + token)
    (size,) = struct.unpack(">i", recv_exact(s, 4))
    return recv_exact(s, size)


def test_handshake_v0_takes_bare_tokens(sasl_cluster: EmbeddedCluster) -> None:
    with connect(sasl_cluster.bootstrap_servers) as s:
        assert handshake(s, "PLAIN", version=0).error_code == 0
        assert raw_token(s, b"\0alice\0" + USERS["alice"].encode()) == b""
        assert call(s, METADATA, MetadataResponse).topics
    client = ScramClient("bob", USERS["bob"], "SCRAM-SHA-512")
    with connect(sasl_cluster.bootstrap_servers) as s:
        assert handshake(s, "SCRAM-SHA-512", version=0).error_code == 0
        client.process_server_first_message(raw_token(s, client.first_message()))
        client.process_server_final_message(raw_token(s, client.final_message()))
        assert call(s, METADATA, MetadataResponse).topics
    with connect(sasl_cluster.bootstrap_servers) as s:
        assert handshake(s, "PLAIN", version=0).error_code == 0
        s.sendall(struct.pack(">i", 11) + b"\0alice\0nope")
        assert closed(s)  # v0 has no error answer: the broker just closes


def test_big_frames_are_refused_before_authentication(sasl_cluster: EmbeddedCluster) -> None:
    with connect(sasl_cluster.bootstrap_servers) as s:
        s.sendall(struct.pack(">i", 10 * 1024 * 1024) + b"\0" * 1024)
        assert closed(s)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_admin_over_sasl_plaintext(sasl_cluster: EmbeddedCluster, mechanism: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=sasl_cluster.bootstrap_servers,
                             **kafka_python_config("SASL_PLAINTEXT", "alice", mechanism=mechanism))
    try:
        assert "t" in admin.list_topics()
    finally:
        admin.close()


# ---- TLS ----------------------------------------------------------------------------------------------
def test_kafka_python_admin_over_sasl_ssl(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=2, data_dir=tmp_path, config=broker_config("SASL_SSL")) as c:
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers,
                                 **kafka_python_config("SASL_SSL", "admin", mechanism="SCRAM-SHA-512"))
        try:
            admin.create_topics([NewTopic("secure", 2, 2)])
            assert "secure" in admin.list_topics()
            assert len(admin.describe_cluster()["brokers"]) == 2
        finally:
            admin.close()


def test_mtls_principal_is_the_certificate_subject(tmp_path: Path) -> None:
    certs = certificates()
    subject_acl = {"principal": "User:CN=client,O=kafka-txn tests", "permission": "ALLOW",
                   "operation": "Describe", "resource": "Topic", "name": "mine"}
    cfg = broker_config("SSL", **{"ssl.client.auth": "required", "ssl.truststore.location": str(certs.ca),
                                  "authorizer.class.name": "acl", "authorizer.acls": [subject_acl]})
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=cfg) as c:
        c.create_topic("mine")
        c.create_topic("theirs")
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers, security_protocol="SSL",
                                 ssl_cafile=str(certs.ca), ssl_certfile=str(certs.client_cert),
                                 ssl_keyfile=str(certs.client_key))
        try:
            assert admin.list_topics() == ["mine"]
        finally:
            admin.close()
        with pytest.raises(Exception):  # noqa: B017 - any failure: no client certificate, no connection
            KafkaAdminClient(bootstrap_servers=c.bootstrap_servers, security_protocol="SSL",
                             ssl_cafile=str(certs.ca), bootstrap_timeout_ms=1000, request_timeout_ms=1000)


def test_inline_pem_and_encrypted_keys(tmp_path: Path) -> None:
    certs = certificates()
    variants = [
        {"ssl.keystore.certificate.chain": certs.server_cert.read_text(),
         "ssl.keystore.key": certs.server_key.read_text()},
        {"ssl.keystore.certificate.chain": str(certs.server_cert), "ssl.keystore.key": str(certs.server_key_encrypted),
         "ssl.key.password": KEY_PASSWORD},
    ]
    for i, extra in enumerate(variants):
        cfg = {**broker_config("SSL"), "ssl.keystore.location": "", **extra}
        with EmbeddedCluster(nodes=1, data_dir=tmp_path / str(i), config=cfg) as c:
            assert served_certificate(c.bootstrap_servers) == first_certificate(certs.server_cert), extra
            c.create_topic(f"inline-{i}")
            admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers, **kafka_python_config("SSL"))
            try:
                assert admin.list_topics() == [f"inline-{i}"]
            finally:
                admin.close()


def served_certificate(bootstrap: str) -> bytes:
    """The certificate (DER) the first listener of `bootstrap` presents in its TLS handshake."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # what is presented is checked below, not whether it is trusted
    with socket.create_connection((host, int(port)), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=host) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


def first_certificate(pem_file: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(pem_file.read_text().split("-----END CERTIFICATE-----")[0]
                                    + "-----END CERTIFICATE-----\n")


@pytest.mark.parametrize("extra, words", [
    ({"security.protocol": "SSL"}, "need the broker's certificate and key"),
    ({"security.protocol": "SSL", "ssl.keystore.location": "/nonexistent.pem"}, "does not exist"),
    ({"security.protocol": "SSL", "ssl.keystore.type": "JKS"}, "openssl pkcs12"),
    ({"security.protocol": "SASL_PLAINTEXT"}, "needs users: set sasl.users"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.users": ["a:b"], "sasl.enabled.mechanisms": "PLAIN,NTLM"},
     "NTLM not supported"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "OAUTHBEARER"},
     "set sasl.oauthbearer.jwks.endpoint.url"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.users": ["a:b"], "sasl.scram.iterations": 10}, "at least 4096"),
    ({"authorizer.acls": ["User:a ALLOW Read Topic t"]}, "set authorizer.class.name=acl"),
    ({"authorizer.class.name": "com.example.Custom"}, "is not available"),
    ({"authorizer.class.name": "acl", "authorizer.acls": ["User:a ALLOW Read"]}, "authorizer.acls"),
    ({"security.protocol": "TLS"}, "is not one of PLAINTEXT"),
])
def test_config_errors_name_the_property(tmp_path: Path, extra: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        ClusterSecurity.from_config(BrokerConfig(extra), tmp_path)


def test_wrong_key_password_is_a_config_error_without_the_password(tmp_path: Path) -> None:
    certs = certificates()
    cfg = {"security.protocol": "SSL", "ssl.keystore.certificate.chain": str(certs.server_cert),
           "ssl.keystore.key": str(certs.server_key_encrypted), "ssl.key.password": "guess-Qv8"}
    with pytest.raises(ConfigError) as err:
        ClusterSecurity.from_config(BrokerConfig(cfg), tmp_path)
    assert "ssl.key.password" in str(err.value) and "guess-Qv8" not in str(err.value)


def test_sasl_handshake_on_a_listener_without_sasl_is_illegal_but_harmless(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=broker_config("PLAINTEXT")) as c, \
            connect(c.bootstrap_servers) as s:
        assert handshake(s, "PLAIN").error_code == 34
        assert call(s, METADATA, MetadataResponse).topics == []  # the connection carries on


def test_acls_created_over_the_wire_survive_a_restart(tmp_path: Path) -> None:
    from kafka.admin import ACL, ACLOperation, ACLPermissionType, ResourcePattern, ResourceType

    cfg = broker_config("SASL_PLAINTEXT", **{"authorizer.class.name": "acl", "super.users": "User:admin"})
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=cfg) as c:
        c.create_topic("t")
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers,
                                 **kafka_python_config("SASL_PLAINTEXT", "admin", mechanism="PLAIN"))
        acl = ACL("User:alice", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
                  ResourcePattern(ResourceType.TOPIC, "t"))
        assert admin.create_acls([acl])["succeeded"] == [acl]
        admin.close()
        c.restart()
        with sasl_plain_socket(c.bootstrap_servers, "alice") as s:
            assert [t.name for t in call(s, METADATA, MetadataResponse).topics] == ["t"]
        with sasl_plain_socket(c.bootstrap_servers, "bob") as s:
            assert call(s, METADATA, MetadataResponse).topics == []

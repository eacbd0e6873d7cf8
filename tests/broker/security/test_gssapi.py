"""SASL/GSSAPI on the embedded broker against a real MIT KDC: kafka-python's GSSAPI client authenticates
with a ticket and the short name is the ACL principal; tickets the broker cannot take are refused by
name (another service, clock skew); the broker's own Kerberos settings fail at start with the property."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse

from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError
from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.security.auth import ClusterSecurity
from tests.broker.security.kerberos import REALM, Realm
from tests.broker.security.test_auth import closed, handshake
from tests.broker.wire import connect, recv_frame, send_request

pytestmark = pytest.mark.needs("gssapi")


def gssapi_config(keytab: Path, protocol: str = "SASL_PLAINTEXT", **extra: Any) -> dict[str, Any]:
    return {"security.protocol": protocol, "sasl.enabled.mechanisms": "GSSAPI", "sasl.kerberos.service.name": "kafka",
            f"listener.name.{protocol.lower()}.gssapi.sasl.jaas.config":
                "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
                f'keyTab="{keytab}" principal="kafka/127.0.0.1@{REALM}";',
            "offsets.topic.num.partitions": 1, "transaction.state.log.num.partitions": 1, **extra}


@pytest.fixture(scope="module")
def keytabs(kdc: Realm) -> dict[str, Path]:
    return {name: kdc.principal(name) for name in ("kafka/127.0.0.1", "alice", "bob", "other/127.0.0.1")}


@pytest.fixture(scope="module")
def cluster(kdc: Realm, keytabs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[EmbeddedCluster]:
    cfg = gssapi_config(keytabs["kafka/127.0.0.1"], **{
        "authorizer.class.name": "acl", "authorizer.acls": ["User:alice ALLOW Describe Topic orders"]})
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("gssapi"), config=cfg) as c:
        c.create_topic("orders", 1, 1)
        c.create_topic("payments", 1, 1)
        yield c


def ticket_cache(kdc: Realm, name: str, keytab: Path, tmp_path: Path) -> str:
    ccache = tmp_path / f"{name}.ccache"
    kdc.kinit(name, keytab, ccache)
    return f"FILE:{ccache}"


def test_kafka_python_authenticates_and_acls_apply_to_the_short_name(
        cluster: EmbeddedCluster, kdc: Realm, keytabs: dict[str, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}
    for user in ("alice", "bob"):
        monkeypatch.setenv("KRB5CCNAME", ticket_cache(kdc, user, keytabs[user], tmp_path))
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="GSSAPI", sasl_kerberos_service_name="kafka")
        try:
            seen[user] = sorted(admin.list_topics())
        finally:
            admin.close()
    # alice@KAFKA.TEST is User:alice, whose ACL shows `orders`; bob@KAFKA.TEST has no ACL and sees nothing.
    assert seen == {"alice": ["orders"], "bob": []}


def first_token(service: str) -> bytes:
    """The client's first GSSAPI token (an AP-REQ) for service@127.0.0.1, from the current credentials."""
    import gssapi

    target = gssapi.Name(f"{service}@127.0.0.1", gssapi.NameType.hostbased_service)
    return bytes(gssapi.SecurityContext(name=target, usage="initiate").step(None))


def refusal(cluster: EmbeddedCluster, token: bytes) -> str:
    with connect(cluster.bootstrap_servers) as s:
        assert handshake(s, "GSSAPI").error_code == 0
        send_request(s, SaslAuthenticateRequest[2](auth_bytes=token), 2)
        answer = SaslAuthenticateResponse.decode(recv_frame(s), version=2, header=True)
        assert answer.error_code == 58 and closed(s), answer
        return str(answer.error_message)


def test_a_ticket_for_another_service_is_refused_by_name(cluster: EmbeddedCluster, kdc: Realm,
                                                         keytabs: dict[str, Path], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRB5CCNAME", ticket_cache(kdc, "alice", keytabs["alice"], tmp_path))
    message = refusal(cluster, first_token("other"))
    assert message == ("Authentication failed: the client's ticket is for other/127.0.0.1@KAFKA.TEST, but this "
                       "broker is kafka/127.0.0.1@KAFKA.TEST: set sasl.kerberos.service.name=kafka on the client")


@pytest.mark.needs("faketime")  # shifts the KDC's clock
def test_clock_skew_between_client_and_broker_is_named(cluster: EmbeddedCluster, kdc: Realm,
                                                       keytabs: dict[str, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The client takes its time from a KDC 10 minutes behind (MIT's kdc_timesync, on by default): its
    authenticator is 10 minutes old by the broker's clock, beyond Kerberos' 5 minutes."""
    proc, conf = kdc.shifted_kdc("-10m")
    try:
        monkeypatch.setenv("KRB5_CONFIG", str(conf))
        subprocess.run(["kinit", "-k", "-t", str(keytabs["alice"]), "-c", f"FILE:{tmp_path}/skew.ccache",
                        f"alice@{REALM}"], check=True, env={**os.environ, "KRB5_CONFIG": str(conf)}, timeout=30)
        monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path}/skew.ccache")
        token = first_token("kafka")
    finally:
        proc.terminate()
        proc.wait(10)
    assert refusal(cluster, token) == ("Authentication failed: clock skew too great between the client and the "
                                       "broker: synchronise their clocks")


def test_the_brokers_kerberos_settings_fail_at_start_with_the_property(keytabs: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    def error(**changes: Any) -> str:
        cfg = {k: v for k, v in gssapi_config(keytabs["kafka/127.0.0.1"]).items() if v is not None}
        cfg.update(changes)
        with pytest.raises(ConfigError) as caught:
            ClusterSecurity.from_config(BrokerConfig({k: v for k, v in cfg.items() if v != ""}), tmp_path)
        return str(caught.value)

    jaas = "listener.name.sasl_plaintext.gssapi.sasl.jaas.config"
    assert error(**{jaas: ""}).startswith(f"sasl.enabled.mechanisms has GSSAPI: set {jaas}")
    assert "sasl.kerberos.service.name=kafka2 does not match the broker's principal" in error(
        **{"sasl.kerberos.service.name": "kafka2"})
    wrong_keytab = gssapi_config(keytabs["alice"])[jaas]
    assert error(**{jaas: wrong_keytab}).startswith(
        f"the broker cannot use keyTab {keytabs['alice']} for kafka/127.0.0.1@KAFKA.TEST")

"""--command-config: Java client properties -> kafka-python keyword arguments (connection/config.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_tools.connection.config import parse_properties, settings_from_properties
from kafka_txn_tools.connection.security.jaas import parse_jaas
from kafka_txn_tools.errors import ConfigError

SCRAM = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="ops" '
         'password="s3cr3t;with \\"quotes\\"";')


def test_properties_syntax() -> None:
    text = ("# comment\n! also a comment\n  a = 1\nb:2\nc 3\nd=line \\\n   continued\ne=tab\\tand\\u0041\n"
            "f\\=g=h\nempty=\n")
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "line continued", "e": "tab\tandA",
                                      "f=g": "h", "empty": ""}


def test_scram_credentials_come_from_the_jaas_line() -> None:
    s = settings_from_properties({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                  "sasl.jaas.config": SCRAM})
    assert s.kwargs["sasl_mechanism"] == "SCRAM-SHA-512"
    assert s.kwargs["sasl_plain_username"] == "ops"
    assert s.kwargs["sasl_plain_password"] == 's3cr3t;with "quotes"'
    assert "s3cr3t" not in repr(s) and s.redacted()["sasl_plain_password"] == "***"


def test_plain() -> None:
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username=alice password=pw;'
    s = settings_from_properties({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                  "sasl.jaas.config": jaas})
    assert (s.kwargs["sasl_plain_username"], s.kwargs["sasl_plain_password"]) == ("alice", "pw")


@pytest.mark.parametrize("props, message", [
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": SCRAM},
     "uses ScramLoginModule but sasl.mechanism is PLAIN"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256"}, "needs a username and password"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "needs a token source"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": "password=oops"},
     "could not be parsed"),
    ({"security.protocol": "TLS"}, "security.protocol=TLS"),
])
def test_config_errors_name_the_property(props, message) -> None:
    with pytest.raises(ConfigError, match=message) as exc:
        settings_from_properties(props)
    assert "oops" not in str(exc.value) and "s3cr3t" not in str(exc.value)


def test_pem_files() -> None:
    from tests.broker.security.support import KEY_PASSWORD, certificates

    certs = certificates()
    key_and_cert = certs.dir / "client-encrypted.pem"
    key_and_cert.write_bytes(certs.server_key_encrypted.read_bytes() + certs.server_cert.read_bytes())
    s = settings_from_properties({"security.protocol": "SSL", "ssl.truststore.location": str(certs.ca),
                                  "ssl.keystore.type": "PEM", "ssl.keystore.location": str(key_and_cert),
                                  "ssl.key.password": KEY_PASSWORD, "ssl.endpoint.identification.algorithm": ""})
    ctx = s.kwargs["ssl_context"]
    assert [c["subject"][-1][0][1] for c in ctx.get_ca_certs()] == ["kafka-txn test CA"]
    assert ctx.check_hostname is False and s.kwargs["ssl_check_hostname"] is False
    assert KEY_PASSWORD not in repr(s)


def p12(tmp_path: Path, name: str, password: str | None, key: bool) -> Path:
    """A PKCS12 store made with cryptography: the CA only (a trust store) or key + certificate + CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import (
        BestAvailableEncryption,
        NoEncryption,
        load_pem_private_key,
        pkcs12,
    )

    from tests.broker.security.support import certificates

    certs = certificates()
    ca = x509.load_pem_x509_certificate(certs.ca.read_bytes())
    private = load_pem_private_key(certs.client_key.read_bytes(), None) if key else None
    cert = x509.load_pem_x509_certificate(certs.client_cert.read_bytes()) if key else None
    enc = BestAvailableEncryption(password.encode()) if password else NoEncryption()
    path = tmp_path / name
    path.write_bytes(pkcs12.serialize_key_and_certificates(b"client", private, cert, [ca], enc))
    return path


def test_pkcs12_stores_are_read_in_memory(tmp_path: Path) -> None:
    trust = p12(tmp_path, "trust.p12", "changeit", key=False)
    keys = p12(tmp_path, "client.p12", "store-pw", key=True)
    s = settings_from_properties({"security.protocol": "SSL", "ssl.truststore.type": "PKCS12",
                                  "ssl.truststore.location": str(trust), "ssl.truststore.password": "changeit",
                                  "ssl.keystore.location": str(keys), "ssl.keystore.password": "store-pw"})
    assert [c["subject"][-1][0][1] for c in s.kwargs["ssl_context"].get_ca_certs()] == ["kafka-txn test CA"]
    assert not list(tmp_path.glob("*.pem")) and "store-pw" not in repr(s)
    with pytest.raises(ConfigError, match="wrong ssl.keystore.password") as exc:
        settings_from_properties({"security.protocol": "SSL", "ssl.keystore.location": str(keys),
                                  "ssl.keystore.password": "nope"})
    assert "nope" not in str(exc.value)


def test_jks_gets_the_conversion_command_and_a_missing_store_is_missing(tmp_path: Path) -> None:
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 60)
    with pytest.raises(ConfigError, match="is a JKS keystore") as exc:
        settings_from_properties({"security.protocol": "SSL", "ssl.truststore.location": str(jks)})
    assert "keytool -importkeystore" in str(exc.value) and "PKCS12" in str(exc.value)
    for declared in ("PKCS12", "JKS", "PEM", None):
        props = {"security.protocol": "SSL", "ssl.keystore.location": str(tmp_path / "gone.p12")}
        if declared:
            props["ssl.keystore.type"] = declared
        with pytest.raises(ConfigError, match="gone.p12 does not exist"):
            settings_from_properties(props)


def test_unknown_properties_warn_and_plaintext_ignores_ssl() -> None:
    s = settings_from_properties({"security.protocol": "PLAINTEXT", "ssl.truststore.location": "/nope",
                                  "linger.ms": "5", "retries": "3", "request.timeout.ms": "5000"})
    assert s.kwargs == {"security_protocol": "PLAINTEXT", "request_timeout_ms": 5000}
    assert s.warnings == ["--command-config: property linger.ms is not used by kafka-txn and was ignored"]


def test_jaas_parse() -> None:
    jaas = parse_jaas(SCRAM)
    assert jaas.login_module.endswith("ScramLoginModule") and set(jaas.options) == {"username", "password"}
    assert "s3cr3t" not in repr(jaas)


def test_described_names_how_it_connects_and_no_secret() -> None:
    # What `kafka-txn dump` records with its cluster: the protocol, the mechanism, the TLS files; never a
    # password, a key password or a JAAS line.
    from tests.broker.security.support import KEY_PASSWORD, certificates

    certs = certificates()
    key_and_cert = certs.dir / "client-described.pem"
    key_and_cert.write_bytes(certs.server_key_encrypted.read_bytes() + certs.server_cert.read_bytes())
    s = settings_from_properties({
        "security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="ops" '
                            'password="s3cret-pw";',
        "ssl.truststore.location": str(certs.ca), "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(key_and_cert), "ssl.key.password": KEY_PASSWORD})
    assert s.described == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                           "ssl.truststore.location": str(certs.ca), "ssl.keystore.type": "PEM",
                           "ssl.keystore.location": str(key_and_cert)}
    assert "s3cret-pw" not in repr(s.described) and KEY_PASSWORD not in repr(s.described)
    # ssl.* under PLAINTEXT is a shared file's leftover, not how it connects; GSSAPI is SASL's default mechanism.
    assert settings_from_properties({"ssl.truststore.location": "/x.pem"}).described == {
        "security.protocol": "PLAINTEXT"}

"""--command-config: Java client properties -> kafka-python keyword arguments (admin/config.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_tools.admin.config import parse_jaas, parse_properties, settings_from_properties
from kafka_txn_tools.admin.errors import ConfigError

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
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "needs a token provider"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": "password=oops"},
     "could not be parsed"),
    ({"security.protocol": "TLS"}, "security.protocol=TLS"),
])
def test_config_errors_name_the_property(props, message) -> None:
    with pytest.raises(ConfigError, match=message) as exc:
        settings_from_properties(props)
    assert "oops" not in str(exc.value) and "s3cr3t" not in str(exc.value)


def test_pem_files(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n")
    client = tmp_path / "client.pem"
    client.write_text("-----BEGIN CERTIFICATE-----\n...\n-----BEGIN PRIVATE KEY-----\n")
    s = settings_from_properties({"security.protocol": "SSL", "ssl.truststore.location": str(ca),
                                  "ssl.keystore.type": "PEM", "ssl.keystore.location": str(client),
                                  "ssl.key.password": "kp", "ssl.endpoint.identification.algorithm": ""})
    assert s.kwargs["ssl_cafile"] == str(ca)
    assert s.kwargs["ssl_certfile"] == s.kwargs["ssl_keyfile"] == str(client)
    assert s.kwargs["ssl_password"] == "kp" and s.kwargs["ssl_check_hostname"] is False


def test_java_keystores_get_the_conversion_command(tmp_path: Path) -> None:
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 60)
    with pytest.raises(ConfigError, match="is a JKS file") as exc:
        settings_from_properties({"security.protocol": "SSL", "ssl.truststore.location": str(jks)})
    assert "keytool -exportcert -rfc" in str(exc.value)
    p12 = tmp_path / "client.p12"
    p12.write_bytes(b"0\x82\x0b\x01")
    with pytest.raises(ConfigError, match="PKCS12") as exc:
        settings_from_properties({"security.protocol": "SSL", "ssl.keystore.type": "PKCS12",
                                  "ssl.keystore.location": str(p12)})
    assert "openssl pkcs12 -in" in str(exc.value)


def test_unknown_properties_warn_and_plaintext_ignores_ssl() -> None:
    s = settings_from_properties({"security.protocol": "PLAINTEXT", "ssl.truststore.location": "/nope",
                                  "linger.ms": "5", "retries": "3", "request.timeout.ms": "5000"})
    assert s.kwargs == {"security_protocol": "PLAINTEXT", "request_timeout_ms": 5000}
    assert s.warnings == ["--command-config: property linger.ms is not used by kafka-txn and was ignored"]


def test_jaas_parse() -> None:
    jaas = parse_jaas(SCRAM)
    assert jaas.login_module.endswith("ScramLoginModule") and set(jaas.options) == {"username", "password"}
    assert "s3cr3t" not in repr(jaas)

"""Test support for TLS and SASL: certificates made at run time (once per test process) and configs.

`certificates()` writes a CA, a server certificate for 127.0.0.1/localhost and a client certificate
(CN=client) as PEM files into a temporary directory removed at exit. EC keys keep generation fast.
"""

from __future__ import annotations

import atexit
import datetime
import functools
import ipaddress
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

USERS = {"admin": "admin-secret-Zq7", "alice": "alice-secret-Xw9", "bob": "bob-secret-Kp4"}
KEY_PASSWORD = "key-pass-Rt2"


@dataclass(frozen=True)
class Certificates:
    dir: Path
    ca: Path            # CA certificate (trust store for clients and for the broker's mTLS)
    server: Path        # server key + certificate in one PEM file (ssl.keystore.location)
    server_cert: Path
    server_key: Path
    server_key_encrypted: Path  # encrypted with KEY_PASSWORD
    client_cert: Path
    client_key: Path
    client: Path        # client key + certificate


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafka-txn tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: str, key: Any, issuer: x509.Name, issuer_key: Any, *, ca: bool = False,
          san: list[x509.GeneralName] | None = None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                      content_commitment=False, key_encipherment=False,
                                                      data_encipherment=False, key_agreement=False,
                                                      encipher_only=False, decipher_only=False), critical=True)
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem_key(key: Any, password: str | None = None) -> bytes:
    enc: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@functools.cache
def certificates() -> Certificates:
    root = Path(tempfile.mkdtemp(prefix="kafka-txn-certs-"))
    atexit.register(shutil.rmtree, root, True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("kafka-txn test CA", ca_key, _name("kafka-txn test CA"), ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _cert("localhost", server_key, ca.subject, ca_key,
                   san=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = _cert("client", client_key, ca.subject, ca_key)
    files = {
        "ca": _pem_cert(ca), "server": _pem_key(server_key) + _pem_cert(server) + _pem_cert(ca),
        "server_cert": _pem_cert(server) + _pem_cert(ca), "server_key": _pem_key(server_key),
        "server_key_encrypted": _pem_key(server_key, KEY_PASSWORD),
        "client_cert": _pem_cert(client), "client_key": _pem_key(client_key),
        "client": _pem_key(client_key) + _pem_cert(client),
    }
    paths = {}
    for name, data in files.items():
        path = root / f"{name.replace('_', '-')}.pem"
        path.write_bytes(data)
        path.chmod(0o600)
        paths[name] = path
    return Certificates(dir=root, **paths)


def broker_config(protocol: str, **extra: Any) -> dict[str, Any]:
    """Broker properties for `protocol` with the test certificates and USERS."""
    cfg: dict[str, Any] = {"security.protocol": protocol, "offsets.topic.num.partitions": 3,
                           "transaction.state.log.num.partitions": 3}
    if protocol.endswith("SSL"):
        cfg["ssl.keystore.location"] = str(certificates().server)
    if protocol.startswith("SASL_"):
        cfg["sasl.users"] = [f"{u}:{p}" for u, p in USERS.items()]
    cfg.update(extra)
    return cfg


def confluent_config(bootstrap: str, protocol: str, user: str | None = None, password: str | None = None,
                     mechanism: str = "SCRAM-SHA-512", **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"bootstrap.servers": bootstrap, "security.protocol": protocol}
    if protocol.endswith("SSL"):
        cfg["ssl.ca.location"] = str(certificates().ca)
    if protocol.startswith("SASL_"):
        cfg.update({"sasl.mechanism": mechanism, "sasl.username": user,
                    "sasl.password": password if password is not None else USERS[user or ""]})
    cfg.update(extra)
    return cfg


def kafka_python_config(protocol: str, user: str | None = None, password: str | None = None,
                        mechanism: str = "SCRAM-SHA-512") -> dict[str, Any]:
    cfg: dict[str, Any] = {"security_protocol": protocol}
    if protocol.endswith("SSL"):
        cfg["ssl_cafile"] = str(certificates().ca)
    if protocol.startswith("SASL_"):
        cfg.update({"sasl_mechanism": mechanism, "sasl_plain_username": user,
                    "sasl_plain_password": password if password is not None else USERS[user or ""]})
    return cfg


# ---- raw SASL over a plain socket (tests/broker/wire.py speaks the Kafka framing) ----------------------
def sasl_plain_socket(address: str, user: str, password: str | None = None) -> Any:
    """A socket to the first broker of `address`, authenticated with SASL/PLAIN (SaslHandshake v1)."""
    from kafka.protocol.sasl import (
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
        SaslHandshakeRequest,
        SaslHandshakeResponse,
    )

    from tests.broker.wire import connect, recv_frame, send_request

    s = connect(address)
    send_request(s, SaslHandshakeRequest[1](mechanism="PLAIN"), 1)
    hs = SaslHandshakeResponse.decode(recv_frame(s), version=1, header=True)
    assert hs.error_code == 0, hs
    token = f"\0{user}\0{password if password is not None else USERS[user]}".encode()
    send_request(s, SaslAuthenticateRequest[2](auth_bytes=token), 2)
    auth = SaslAuthenticateResponse.decode(recv_frame(s), version=2, header=True)
    if auth.error_code:
        s.close()
        raise PermissionError(auth.error_message)
    return s


def call(sock: Any, req: Any, response_cls: Any, correlation_id: int = 7) -> Any:
    """One request on an open (authenticated) socket, its decoded response."""
    from tests.broker.wire import recv_frame, send_request

    send_request(sock, req, correlation_id)
    resp = response_cls.decode(recv_frame(sock), version=req.API_VERSION, header=True)
    assert resp.header.correlation_id == correlation_id
    return resp

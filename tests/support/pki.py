"""A throwaway PKI for TLS tests (the `cryptography` package): one CA, a server certificate for 127.0.0.1
and localhost, a client certificate, each as PEM files; and a second, untrusted CA's client certificate."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path  # a client certificate signed by another CA
    stranger_key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


def _ca(common: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(common)).issuer_name(_name(common))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def _leaf(common: str, ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey], server: bool
          ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(common)).issuer_name(ca[0].subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                     else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return builder.sign(ca[1], hashes.SHA256()), key


def make_pki(folder: Path) -> Pki:
    folder.mkdir(parents=True, exist_ok=True)
    ca = _ca("kafka-txn test CA")
    other = _ca("someone else's CA")
    files = {}
    for name, (cert, key) in {"server": _leaf("monitor", ca, True), "client": _leaf("prometheus", ca, False),
                              "stranger": _leaf("prometheus", other, False)}.items():
        files[name] = (folder / f"{name}.crt", folder / f"{name}.key")
        files[name][0].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, files[name][1])
    (folder / "ca.crt").write_bytes(ca[0].public_bytes(serialization.Encoding.PEM))
    return Pki(folder / "ca.crt", *files["server"], *files["client"], *files["stranger"])


ROOT = Path(__file__).resolve().parents[2]
SHIPPED_WEB_CONFIG = ROOT / "deploy" / "monitor" / "web-config.yml"
SHIPPED_SCRAPE = ROOT / "deploy" / "prometheus" / "kafka-txn-scrape.yml"
PLACEHOLDER = "REPLACE-WITH-A-BCRYPT-HASH"


def shipped_web_config(pki: Pki, folder: Path, bcrypt_hash: str) -> Path:
    """deploy/monitor/web-config.yml as an operator installs it: the certificates where it names them (under
    `folder` instead of /etc/kafka-txn) and the placeholder replaced by a hash."""
    tls = folder / "tls"
    tls.mkdir(parents=True, exist_ok=True)
    for name, source in {"monitor.crt": pki.server_cert, "monitor.key": pki.server_key,
                         "clients-ca.crt": pki.ca}.items():
        (tls / name).write_bytes(source.read_bytes())
    text = SHIPPED_WEB_CONFIG.read_text().replace("/etc/kafka-txn/", f"{folder}/").replace(PLACEHOLDER, bcrypt_hash)
    out = folder / "web-config.yml"
    out.write_text(text)
    return out


def shipped_scrape_config(pki: Pki, folder: Path, password: str, target: str) -> Path:
    """deploy/prometheus/kafka-txn-scrape.yml as installed: its files under `folder` (for
    /etc/prometheus/kafka-txn), the monitor at `target`, the shipped rules beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in {"ca.crt": pki.ca, "prometheus.crt": pki.client_cert,
                         "prometheus.key": pki.client_key}.items():
        (folder / name).write_bytes(source.read_bytes())
    (folder / "password").write_text(password)
    (folder / "kafka-txn-rules.yml").write_bytes((ROOT / "deploy" / "prometheus" / "kafka-txn-rules.yml").read_bytes())
    text = (SHIPPED_SCRAPE.read_text().replace("/etc/prometheus/kafka-txn/", f"{folder}/")
            .replace("monitor-host:8797", target))
    out = folder / "prometheus.yml"
    out.write_text(text)
    return out

"""TLS for the SSL and SASL_SSL listeners: a server SSLContext from PEM material, and mTLS principals.

Kafka's PEM options are accepted: `ssl.keystore.location` (one PEM file with the private key and the
certificate chain, as Kafka's `ssl.keystore.type=PEM` keystore), or `ssl.keystore.certificate.chain`
plus `ssl.keystore.key` (each PEM text, as in Kafka, or a path to a PEM file); `ssl.key.password`
for an encrypted key; `ssl.truststore.location` or `ssl.truststore.certificates` for the CAs that sign
client certificates; `ssl.client.auth` none / requested / required. TLS 1.2 is the minimum.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_PEM_START = "-----BEGIN"
_CONVERT = ("convert it to PEM, e.g. `openssl pkcs12 -in keystore.p12 -nodes -out server.pem`, then set "
            "ssl.keystore.type=PEM and ssl.keystore.location=server.pem")


def server_context(cfg: BrokerConfig) -> ssl.SSLContext:
    if cfg["ssl.keystore.type"].upper() != "PEM":
        raise ConfigError(f"ssl.keystore.type={cfg['ssl.keystore.type']} cannot be read by Python's ssl module: "
                          + _CONVERT)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    with _keystore_files(cfg) as (certfile, keyfile):
        try:
            ctx.load_cert_chain(certfile, keyfile, password=cfg["ssl.key.password"] or None)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(f"cannot load the broker's TLS certificate and key ({_reason(exc)}): check "
                              "ssl.keystore.* and ssl.key.password") from None
    _load_trust(ctx, cfg)
    return ctx


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return str(exc.reason or exc.__class__.__name__)
    return getattr(exc, "strerror", None) or exc.__class__.__name__


@contextlib.contextmanager
def _keystore_files(cfg: BrokerConfig) -> Iterator[tuple[str, str | None]]:
    location, chain, key = cfg["ssl.keystore.location"], cfg["ssl.keystore.certificate.chain"], cfg["ssl.keystore.key"]
    if location and (chain or key):
        raise ConfigError("set either ssl.keystore.location or ssl.keystore.certificate.chain + ssl.keystore.key")
    if location:
        yield _existing(location, "ssl.keystore.location"), None
        return
    if not (chain and key):
        raise ConfigError("TLS listeners need the broker's certificate and key: set ssl.keystore.location "
                          "(PEM with key and chain) or ssl.keystore.certificate.chain and ssl.keystore.key")
    with tempfile.TemporaryDirectory(prefix="kafka-txn-tls-") as tmp:
        yield (_as_file(chain, "ssl.keystore.certificate.chain", Path(tmp) / "chain.pem"),
               _as_file(key, "ssl.keystore.key", Path(tmp) / "key.pem"))


def _existing(path: str, key: str) -> str:
    if not Path(path).is_file():
        raise ConfigError(f"{key}={path} does not exist or is not a file")
    return path


def _as_file(value: str, key: str, scratch: Path) -> str:
    """A path as is; inline PEM text written to a private scratch file (load_cert_chain reads files)."""
    if not value.lstrip().startswith(_PEM_START):
        return _existing(value, key)
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value)
    return str(scratch)


def _load_trust(ctx: ssl.SSLContext, cfg: BrokerConfig) -> None:
    mode = CLIENT_AUTH[cfg["ssl.client.auth"]]
    location, inline = cfg["ssl.truststore.location"], cfg["ssl.truststore.certificates"]
    if cfg["ssl.truststore.type"].upper() != "PEM":
        raise ConfigError(f"ssl.truststore.type={cfg['ssl.truststore.type']} is not supported: use PEM CA files")
    if mode != ssl.CERT_NONE and not (location or inline):
        raise ConfigError(f"ssl.client.auth={cfg['ssl.client.auth']} needs the CAs of client certificates: "
                          "set ssl.truststore.location")
    try:
        if location:
            ctx.load_verify_locations(cafile=_existing(location, "ssl.truststore.location"))
        if inline:
            if inline.lstrip().startswith(_PEM_START):
                ctx.load_verify_locations(cadata=inline)
            else:
                ctx.load_verify_locations(cafile=_existing(inline, "ssl.truststore.certificates"))
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"cannot load the TLS trust store ({_reason(exc)}): check ssl.truststore.*") from None
    ctx.verify_mode = mode


# ---- mTLS principal ----------------------------------------------------------------------------------
_SHORT = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C",
          "localityName": "L", "stateOrProvinceName": "ST", "streetAddress": "STREET", "domainComponent": "DC",
          "userId": "UID", "emailAddress": "EMAILADDRESS"}


def _escape(value: str) -> str:
    out = "".join("\\" + ch if ch in ',+"\\<>;=' else ch for ch in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    return out[:-1] + "\\ " if out.endswith(" ") else out


def principal_from_cert(cert: dict[str, Any] | None) -> str | None:
    """`User:<distinguished name>` as Kafka's default SSL principal (RFC 2253: most specific RDN first)."""
    if not cert or not cert.get("subject"):
        return None
    rdns = ["+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn) for rdn in cert["subject"]]
    return "User:" + ",".join(reversed(rdns))

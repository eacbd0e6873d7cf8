"""The TLS context for `ssl.*` client properties: PEM files, and PKCS12 stores read in memory.

Java clients default to JKS stores and increasingly use PKCS12 (Kafka's default store type since 3.x
tooling); Python's ssl module reads only PEM files. PKCS12 stores are opened with `cryptography`,
and the key and certificates never touch the disk: the key is handed to ssl through an anonymous
in-memory file (memfd) where the platform has one, else a private temporary file removed at once.
JKS, a Java-only format, gets an error with the keytool command that converts it to PKCS12.

Nothing here logs or repeats a password.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_txn_tools.errors import ConfigError

PEM, PKCS12, JKS = "PEM", "PKCS12", "JKS"


@dataclass(frozen=True)
class Store:
    """One of ssl.truststore.* / ssl.keystore.* (kind is "truststore" or "keystore")."""

    kind: str
    location: Path
    declared_type: str | None = None
    password: str | None = None

    def __repr__(self) -> str:  # never the password
        return f"Store({self.kind}, {str(self.location)!r}, type={self.declared_type})"

    @property
    def key(self) -> str:
        return f"ssl.{self.kind}.location"


@dataclass(frozen=True)
class TlsSettings:
    truststore: Store | None = None
    keystore: Store | None = None
    key_password: str | None = None
    check_hostname: bool = True

    def __repr__(self) -> str:
        return f"TlsSettings(truststore={self.truststore!r}, keystore={self.keystore!r})"


def store_type(store: Store) -> str:
    """The declared type, else what the file looks like; a missing file is reported as missing."""
    try:
        head = store.location.read_bytes()[:64]
    except FileNotFoundError:
        raise ConfigError(f"{store.key} {store.location} does not exist",
                          f"give the path of the {store.kind} file") from None
    except IsADirectoryError:
        raise ConfigError(f"{store.key} {store.location} is a directory, not a {store.kind} file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {store.key} {store.location}: {exc.strerror}") from None
    if store.declared_type:
        return store.declared_type.upper()
    if b"-----BEGIN" in head:
        return PEM
    if head[:4] == b"\xfe\xed\xfe\xed":
        return JKS
    return PKCS12


def build_context(tls: TlsSettings) -> ssl.SSLContext:
    """An SSLContext as a Java client with these properties would verify and present."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies certificates; hostnames unless told not to
    ctx.check_hostname = tls.check_hostname
    if tls.truststore is not None:
        _load_trust(ctx, tls.truststore)  # replaces the system CAs, as a Java trust store does
    else:
        ctx.load_default_certs()
    if tls.keystore is not None:
        _load_key(ctx, tls.keystore, tls.key_password)
    return ctx


def _load_trust(ctx: ssl.SSLContext, store: Store) -> None:
    kind = store_type(store)
    if kind == PEM:
        try:
            ctx.load_verify_locations(cafile=str(store.location))
        except ssl.SSLError as exc:
            raise ConfigError(f"{store.key} {store.location} holds no usable PEM certificate ({exc.reason})") from None
        return
    if kind == PKCS12:
        _key, certs = _read_pkcs12(store)
        if not certs:
            raise ConfigError(f"{store.key} {store.location} holds no certificate to trust")
        ctx.load_verify_locations(cadata="".join(_pem(c) for c in certs))
        return
    raise _unreadable_type(store, kind)


def _load_key(ctx: ssl.SSLContext, store: Store, key_password: str | None) -> None:
    kind = store_type(store)
    if kind == PEM:
        try:
            ctx.load_cert_chain(str(store.location), password=key_password or store.password)
        except ssl.SSLError as exc:
            raise ConfigError(f"{store.key} {store.location}: cannot load its key and certificate ({exc.reason})",
                              "a PEM keystore holds the private key and the certificate chain; check "
                              "ssl.key.password") from None
        return
    if kind == PKCS12:
        key, certs = _read_pkcs12(store, key_password)
        if key is None or not certs:
            raise ConfigError(f"{store.key} {store.location} holds no private key with a certificate")
        with _memory_file(_pem_key(key) + "".join(_pem(c) for c in certs)) as path:
            ctx.load_cert_chain(path)
        return
    raise _unreadable_type(store, kind)


def _unreadable_type(store: Store, kind: str) -> ConfigError:
    if kind == JKS:
        p12 = store.location.with_suffix(".p12")
        return ConfigError(
            f"{store.key} {store.location} is a JKS keystore, a Java-only format kafka-txn cannot read",
            f"convert it to PKCS12: keytool -importkeystore -srckeystore {store.location} -destkeystore {p12} "
            f"-deststoretype PKCS12, then set ssl.{store.kind}.type=PKCS12 and {store.key}={p12}")
    return ConfigError(f"ssl.{store.kind}.type={kind} is not supported", "use PEM or PKCS12")


def _read_pkcs12(store: Store, key_password: str | None = None) -> tuple[Any, list[Any]]:
    try:
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:
        raise ConfigError(f"{store.key} {store.location} is a PKCS12 store, which needs the Python package "
                          "cryptography", "pip install cryptography") from None
    data = store.location.read_bytes()
    # Java keystores usually protect the key with the store password; ssl.key.password may differ.
    candidates: list[str | None] = [p for p in (store.password, key_password) if p]
    for password in dict.fromkeys([*candidates, None]):
        try:
            loaded = pkcs12.load_pkcs12(data, password.encode() if password else None)
        except ValueError:
            continue
        certs = [loaded.cert.certificate] if loaded.cert is not None else []
        certs += [c.certificate for c in loaded.additional_certs]
        return loaded.key, certs
    raise ConfigError(f"cannot open {store.key} {store.location}: wrong ssl.{store.kind}.password, or not a "
                      "PKCS12 file", f"check ssl.{store.kind}.password and ssl.{store.kind}.type")


def _pem(cert: Any) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding

    return str(cert.public_bytes(Encoding.PEM).decode())


def _pem_key(key: Any) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    return str(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode())


@contextmanager
def _memory_file(text: str) -> Iterator[str]:
    """A path whose content is `text`, for ssl's file-only loaders: in memory where possible."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("kafka-txn-key", 0)
        try:
            os.write(fd, text.encode())
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="kafka-txn-") as private:  # mode 0700
        path = os.path.join(private, "key.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
        try:
            yield path
        finally:
            os.unlink(path)
